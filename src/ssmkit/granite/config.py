"""Configuration of the Granite 4.0-H Mamba-2 mixer (one layer), with the values of granite-4.0-h-1b-base.

Defaults follow spec (/work/shared/spec/granite_mamba2.md) §1 and its "Decisions for this project" table
(notably ``rms_norm_eps = 1e-5`` and ``time_step_limit = (0, inf)``).

Workload files (``workloads.json`` for the GPU, ``workloads_cpu.json`` for the CPU default) are JSON lists of
objects with the fields of COMMON.md:

- ``name`` (str), ``kind`` (``"prefill"`` | ``"decode"``), ``batch`` (int), ``seed`` (int),
  ``purpose`` (``"correctness"`` | ``"bench"``);
- prefill: ``lengths`` (list of ``batch`` real lengths; rows are LEFT-padded to ``max(lengths)``);
- decode: ``prefix`` (int, unpadded prefill length) and ``steps`` (int, single-token decode steps after it).

One optional field is used by this project:

- ``continue`` (prefill only; an int, or a list of ints for several calls): after the left-padded prefill, the
  cache is continued by multi-token calls of that many new tokens per row (no padding; 5.17 continuation
  semantics, spec §3.2); each continuation output and the updated cache are compared.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, fields, replace

__all__ = ["GraniteMambaConfig"]

# HF config.json key -> GraniteMambaConfig field (the keys the mixer reads in transformers 5.17).
_HF_KEYS = {
    "hidden_size": "hidden_size",
    "mamba_n_heads": "num_heads",
    "mamba_d_head": "head_dim",
    "mamba_d_state": "d_state",
    "mamba_n_groups": "n_groups",
    "mamba_d_conv": "d_conv",
    "mamba_expand": "expand",
    "mamba_chunk_size": "chunk_size",
    "mamba_conv_bias": "conv_bias",
    "mamba_proj_bias": "proj_bias",
    "rms_norm_eps": "rms_norm_eps",
    "vocab_size": "vocab_size",
    "logits_scaling": "logits_scaling",
    "tie_word_embeddings": "tie_word_embeddings",
    "time_step_limit": "time_step_limit",
}


@dataclass(frozen=True)
class GraniteMambaConfig:
    """Sizes and constants of one Granite Mamba-2 mixer layer plus the readout (spec §1, §1.1).

    Derived sizes: ``intermediate_size`` = expand * hidden_size (= num_heads * head_dim), ``conv_dim`` =
    intermediate_size + 2 * n_groups * d_state, ``in_proj_dim`` = intermediate_size + conv_dim + num_heads.
    """

    hidden_size: int = 1536
    num_heads: int = 48
    head_dim: int = 64
    d_state: int = 128
    n_groups: int = 1
    d_conv: int = 4
    expand: int = 2
    chunk_size: int = 256
    conv_bias: bool = True
    proj_bias: bool = False
    rms_norm_eps: float = 1e-5
    vocab_size: int = 100352
    logits_scaling: float = 6.0
    tie_word_embeddings: bool = True
    time_step_limit: tuple[float, float] = field(default=(0.0, math.inf))

    def __post_init__(self) -> None:
        object.__setattr__(self, "time_step_limit", tuple(float(v) for v in self.time_step_limit))

    @property
    def intermediate_size(self) -> int:
        return self.expand * self.hidden_size

    @property
    def conv_dim(self) -> int:
        return self.intermediate_size + 2 * self.n_groups * self.d_state

    @property
    def in_proj_dim(self) -> int:
        return self.intermediate_size + self.conv_dim + self.num_heads

    def validate(self) -> "GraniteMambaConfig":
        """Raise ValueError naming every unsupported or inconsistent setting; return self when valid."""
        problems = []
        for name in ("hidden_size", "num_heads", "head_dim", "d_state", "n_groups", "d_conv", "expand",
                     "chunk_size", "vocab_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                problems.append(f"{name} must be a positive int, got {value!r}")
        if not problems:
            if self.num_heads * self.head_dim != self.intermediate_size:
                problems.append(
                    f"num_heads * head_dim ({self.num_heads} * {self.head_dim}) must equal expand * hidden_size "
                    f"({self.intermediate_size})")
            if self.num_heads % self.n_groups != 0:
                problems.append(f"num_heads ({self.num_heads}) must be a multiple of n_groups ({self.n_groups})")
        if not (self.rms_norm_eps > 0):
            problems.append(f"rms_norm_eps must be > 0, got {self.rms_norm_eps!r}")
        if not (self.logits_scaling > 0):
            problems.append(f"logits_scaling must be > 0, got {self.logits_scaling!r}")
        lo, hi = self.time_step_limit
        if not lo <= hi:
            problems.append(f"time_step_limit must satisfy lo <= hi, got {self.time_step_limit!r}")
        if not self.tie_word_embeddings:
            problems.append("tie_word_embeddings=False is unsupported: the readout uses the tied embedding "
                            "model.embed_tokens.weight (spec Decisions, last-token readout)")
        if problems:
            raise ValueError("unsupported GraniteMambaConfig: " + "; ".join(problems))
        return self

    @classmethod
    def from_hf_config(cls, path_or_dict) -> "GraniteMambaConfig":
        """Build from an HF ``config.json`` (a dict, a file path, or a folder holding config.json).

        Reads only the keys in ``_HF_KEYS``; missing keys keep this class's defaults (spec §1: e.g.
        ``time_step_limit`` is absent from the published configs). ``mamba_d_head = "auto"`` means
        ``expand * hidden_size // mamba_n_heads`` as in transformers 5.17. Rejects model types other than
        ``granitemoehybrid``, activations other than SiLU and ``time_step_limit = null`` (5.17 fails on it).
        """
        if isinstance(path_or_dict, dict):
            raw = path_or_dict
        elif isinstance(path_or_dict, (str, os.PathLike)):
            path = os.fspath(path_or_dict)
            if os.path.isdir(path):
                path = os.path.join(path, "config.json")
            if not os.path.isfile(path):
                raise FileNotFoundError(f"no HF config.json at {path!r}")
            with open(path, encoding="utf-8") as fh:
                raw = json.load(fh)
        else:
            raise TypeError(f"from_hf_config expects a dict or a path, got {type(path_or_dict).__name__}")
        model_type = raw.get("model_type", "granitemoehybrid")
        if model_type != "granitemoehybrid":
            raise ValueError(f"expected an HF config with model_type 'granitemoehybrid', got {model_type!r}")
        act = raw.get("hidden_act", "silu")
        if act != "silu":
            raise ValueError(f"only hidden_act='silu' is supported (spec §2.1 step 6), got {act!r}")
        values = {ours: raw[theirs] for theirs, ours in _HF_KEYS.items() if theirs in raw}
        if "time_step_limit" in values:
            if values["time_step_limit"] is None:
                raise ValueError("time_step_limit=null is unsupported (transformers 5.17 cannot run with it)")
            values["time_step_limit"] = tuple(values["time_step_limit"])
        if values.get("head_dim") == "auto":
            expand = values.get("expand", cls.expand)
            hidden = values.get("hidden_size", cls.hidden_size)
            values["head_dim"] = expand * hidden // values.get("num_heads", cls.num_heads)
        return cls(**values).validate()

    def to_dict(self) -> dict:
        """Plain JSON-serialisable dict of the fields (``inf`` kept as a float; json writes it as Infinity)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, values: dict) -> "GraniteMambaConfig":
        """Inverse of ``to_dict``; unknown keys raise ValueError."""
        known = {f.name for f in fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown GraniteMambaConfig fields: {sorted(unknown)}")
        return cls(**values).validate()

    @classmethod
    def tiny(cls, **overrides) -> "GraniteMambaConfig":
        """A small config for tests: hidden 64, 8 heads x 16, d_state 16, chunk 8, vocab 128 (then overrides)."""
        base = cls(hidden_size=64, num_heads=8, head_dim=16, d_state=16, chunk_size=8, vocab_size=128)
        return replace(base, **overrides).validate()
