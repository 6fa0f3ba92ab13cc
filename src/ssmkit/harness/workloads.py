"""Workload files of both tracks: load and validate them, pick defaults, and make Granite inputs from seeds.

Granite workloads (``ssmkit/granite/workloads.json``, format in ARCHITECTURE.md / COMMON.md), one JSON list of
  ``{"name", "kind": "prefill"|"decode", "batch", "lengths": [per-row real lengths] (prefill),
     "prefix": int, "steps": int (decode), "seed", "purpose": "correctness"|"bench"}``
with padding on the left. Optional field ``"continue"`` (prefill only; an int, or a list of ints for several calls):
after the prefill, run multi-token continuations of those lengths from the cache (spec §3.2, 5.17 semantics);
continuations have no padding. Unknown fields are kept in ``Workload.extra``.

Mamba-3 cases (``ssmkit/mamba3/cases.json``): ``[{"name", "seqlens": [...], "seed"}]``; inputs come from
``ssmkit.mamba3.inputs.make_inputs(seqlens, seed, device)``.

Inputs are drawn on the CPU with a ``torch.Generator`` seeded from ``(seed, rotation)``, so they are identical on
every device; ``rotation`` selects another input set of the same shape (the benches rotate input sets so no call
sees the inputs of the previous one). Hidden states are N(0, 1), like the output of the input RMSNorm that feeds
the mixer in the model; pad positions get random values too (the layer must mask them, spec §3.3).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import torch

PREFILL = "prefill"
DECODE = "decode"
KINDS = (PREFILL, DECODE)
PURPOSES = ("correctness", "bench")
_KNOWN_FIELDS = {"name", "kind", "batch", "lengths", "prefix", "steps", "seed", "purpose", "continue"}

# Mamba-3 CPU default: the first CPU_CASES cases of cases.json with every length divided by CPU_LENGTH_DIVISOR.
CPU_CASES = 2
CPU_LENGTH_DIVISOR = 8


@dataclass(frozen=True)
class Workload:
    """One Granite workload. ``lengths`` (prefill) are per-row real lengths; the padded length is their max."""

    name: str
    kind: str
    batch: int
    seed: int
    purpose: str
    lengths: tuple[int, ...] = ()
    prefix: int = 0
    steps: int = 0
    continuations: tuple[int, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def seqlen(self) -> int:
        """Padded prefill length (prefill) or prefix length (decode)."""
        return max(self.lengths) if self.kind == PREFILL else self.prefix

    @property
    def padded(self) -> bool:
        return self.kind == PREFILL and min(self.lengths) < self.seqlen


@dataclass(frozen=True)
class Case:
    """One Mamba-3 case: packed sequences of the given lengths, inputs drawn from ``seed``."""

    name: str
    seqlens: tuple[int, ...]
    seed: int


def _int_field(entry: dict, key: str, where: str, minimum: int) -> int:
    value = entry.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{where}: '{key}' must be an integer >= {minimum}, got {value!r}")
    return value


def _int_list(entry: dict, key: str, where: str) -> tuple[int, ...]:
    value = entry.get(key)
    if not isinstance(value, list) or not value or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value
    ):
        raise ValueError(f"{where}: '{key}' must be a non-empty list of integers >= 1, got {value!r}")
    return tuple(value)


def parse_workload(entry: Any, where: str = "workload") -> Workload:
    """Validate one JSON entry and return a ``Workload``; ValueError naming the field otherwise."""
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(entry).__name__}")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where}: 'name' must be a non-empty string, got {name!r}")
    where = f"{where} '{name}'"
    kind = entry.get("kind")
    if kind not in KINDS:
        raise ValueError(f"{where}: 'kind' must be one of {KINDS}, got {kind!r}")
    purpose = entry.get("purpose")
    if purpose not in PURPOSES:
        raise ValueError(f"{where}: 'purpose' must be one of {PURPOSES}, got {purpose!r}")
    batch = _int_field(entry, "batch", where, 1)
    seed = _int_field(entry, "seed", where, 0)
    extra = {k: v for k, v in entry.items() if k not in _KNOWN_FIELDS}
    if kind == PREFILL:
        lengths = _int_list(entry, "lengths", where)
        if len(lengths) != batch:
            raise ValueError(f"{where}: 'lengths' has {len(lengths)} entries but batch is {batch}")
        continuations = ()
        if "continue" in entry:
            raw = entry["continue"]
            try:
                continuations = _int_list({"continue": [raw] if isinstance(raw, int) else raw}, "continue", where)
            except ValueError:
                raise ValueError(f"{where}: 'continue' must be an integer >= 1 or a non-empty list of them, "
                                 f"got {raw!r}") from None
        return Workload(name, kind, batch, seed, purpose, lengths=lengths, continuations=continuations, extra=extra)
    if "continue" in entry:
        raise ValueError(f"{where}: 'continue' is only defined for prefill workloads")
    prefix = _int_field(entry, "prefix", where, 1)
    steps = _int_field(entry, "steps", where, 1)
    return Workload(name, kind, batch, seed, purpose, prefix=prefix, steps=steps, extra=extra)


def _read_json_list(path: str | Path, what: str) -> list:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{what} file not found: {path}")
    data = json.loads(path.read_text())
    if not isinstance(data, list) or not data:
        raise ValueError(f"{path}: expected a non-empty JSON list of {what} entries")
    return data


def load_workloads(path: str | Path) -> list[Workload]:
    """Read and validate a Granite workload file (names must be unique)."""
    workloads = [parse_workload(e, f"{path}[{i}]") for i, e in enumerate(_read_json_list(path, "workload"))]
    names = [w.name for w in workloads]
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: workload names must be unique, got {names}")
    return workloads


def select(workloads: list[Workload], purpose: str) -> list[Workload]:
    """The workloads of one purpose ('correctness' or 'bench'), in file order."""
    if purpose not in PURPOSES:
        raise ValueError(f"purpose must be one of {PURPOSES}, got {purpose!r}")
    return [w for w in workloads if w.purpose == purpose]


CPU_NOTE = "no CUDA: small CPU default; real timings need a GPU"


def default_device() -> str:
    """'cuda' when a GPU is available, else 'cpu'."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_device(device: str | None) -> str:
    """``device`` checked ('cpu', 'cuda' or 'cuda:N'; CUDA must be available), or ``default_device()`` if None."""
    if device is None:
        return default_device()
    dev = torch.device(device)
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for but CUDA is not available")
    return device


def default_workloads_path(device: str) -> Path:
    """``workloads.json`` (real shapes) on CUDA, ``workloads_cpu.json`` (small shapes) on the CPU."""
    name = "workloads.json" if torch.device(device).type == "cuda" else "workloads_cpu.json"
    return Path(str(resources.files("ssmkit.granite") / name))


def input_generator(seed: int, rotation: int = 0) -> torch.Generator:
    """CPU generator for input set ``rotation`` of a workload with ``seed`` (distinct streams per pair)."""
    return torch.Generator().manual_seed(seed * 1_000_003 + rotation)


def left_padding_mask(lengths: tuple[int, ...], device: torch.device | str) -> torch.Tensor | None:
    """(b, max(lengths)) int64 0/1 mask with each row's real tokens at the right end; None without padding."""
    seqlen = max(lengths)
    if min(lengths) == seqlen:
        return None
    positions = torch.arange(seqlen)
    mask = positions[None, :] >= (seqlen - torch.tensor(lengths))[:, None]
    return mask.to(device=device, dtype=torch.int64)


def random_hidden(gen: torch.Generator, shape: tuple[int, ...], device, dtype: torch.dtype) -> torch.Tensor:
    """N(0, 1) hidden states of ``shape`` drawn from ``gen`` in fp32 on the CPU, then cast and moved."""
    return torch.randn(shape, generator=gen).to(device=device, dtype=dtype)


@dataclass
class PrefillInputs:
    """``hidden`` (b, L, hidden) and ``mask`` (b, L) int64 or None; ``continuations``: (b, Li, hidden) each."""

    hidden: torch.Tensor
    mask: torch.Tensor | None
    continuations: list[torch.Tensor]


@dataclass
class DecodeInputs:
    """``prefix`` (b, prefix, hidden) for the cache-building prefill and ``tokens``: ``steps`` x (b, 1, hidden)."""

    prefix: torch.Tensor
    tokens: list[torch.Tensor]


def prefill_inputs(w: Workload, hidden_size: int, device, dtype=torch.bfloat16, rotation: int = 0) -> PrefillInputs:
    """Inputs of a prefill workload (left padded to ``w.seqlen``), deterministic in (w.seed, rotation)."""
    if w.kind != PREFILL:
        raise ValueError(f"workload '{w.name}' is {w.kind}, not prefill")
    gen = input_generator(w.seed, rotation)
    hidden = random_hidden(gen, (w.batch, w.seqlen, hidden_size), device, dtype)
    conts = [random_hidden(gen, (w.batch, n, hidden_size), device, dtype) for n in w.continuations]
    return PrefillInputs(hidden, left_padding_mask(w.lengths, device), conts)


def decode_inputs(w: Workload, hidden_size: int, device, dtype=torch.bfloat16, rotation: int = 0) -> DecodeInputs:
    """Inputs of a decode workload: the prefix and ``w.steps`` single tokens, deterministic in (w.seed, rotation)."""
    if w.kind != DECODE:
        raise ValueError(f"workload '{w.name}' is {w.kind}, not decode")
    gen = input_generator(w.seed, rotation)
    prefix = random_hidden(gen, (w.batch, w.prefix, hidden_size), device, dtype)
    tokens = [random_hidden(gen, (w.batch, 1, hidden_size), device, dtype) for _ in range(w.steps)]
    return DecodeInputs(prefix, tokens)


def load_cases(path: str | Path) -> list[Case]:
    """Read and validate a Mamba-3 case file (unique names, integer seeds, non-empty positive seqlens)."""
    cases = []
    for i, entry in enumerate(_read_json_list(path, "case")):
        where = f"{path}[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
            raise ValueError(f"{where}: expected an object with a non-empty string 'name', got {entry!r}")
        cases.append(Case(entry["name"], _int_list(entry, "seqlens", where), _int_field(entry, "seed", where, 0)))
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: case names must be unique, got {names}")
    return cases


def default_cases_path() -> Path:
    """The package's visible Mamba-3 cases, ``ssmkit/mamba3/cases.json``."""
    return Path(str(resources.files("ssmkit.mamba3") / "cases.json"))


def cpu_cases(cases: list[Case]) -> list[Case]:
    """Small CPU default: the first ``CPU_CASES`` cases with lengths divided by ``CPU_LENGTH_DIVISOR`` (>= 1)."""
    return [
        Case(f"{c.name}_cpu", tuple(max(1, n // CPU_LENGTH_DIVISOR) for n in c.seqlens), c.seed)
        for c in cases[:CPU_CASES]
    ]
