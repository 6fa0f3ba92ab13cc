"""``ssmkit granite bench``: paired timing of the reference (the starter) against a candidate layer.

Per workload with ``purpose == "bench"`` (both layers bf16, same weights):
- prefill: one timed call = a full forward ``layer(hidden, attention_mask=mask)`` on the next of ``ROTATIONS``
  input sets (fresh inputs each call); continuations (``continue``) are not timed;
- decode: each side first builds one cache per input set with a prefix prefill and keeps it pristine; one timed
  call = a single-token step ``layer(token, cache=working)`` (the input set's first token), where ``prepare``
  (outside the timed region) first copies the pristine state into that input set's working cache, since the step
  mutates it. The working caches
  keep their addresses across calls (as a serving loop's caches do), so a candidate may reuse per-cache CUDA
  graphs; every timed call still starts from the same fresh state.
Peak memory: ``torch.cuda.max_memory_allocated`` over one untimed call of each side after a reset (inputs and
caches of both sides are resident, so this is the whole process' peak during that call). Then ``paired_abba``
(``ssmkit.harness.timing``): ``warmup`` calls per side, ``pairs`` A/B/B/A pairs with the reference called once and
the candidate ``inner`` times per pair; speedup = median of the per-pair ratios reference_ms / candidate_ms.
Summary: geometric mean G of the speedups and score = 1 - 1/G (0 if G <= 1). A candidate that raises (or runs out
of memory) while its decode caches are made, or while it is measured or timed, gets speedup 0 on that workload,
hence G = 0 and score 0; a workload where the reference itself fails (e.g. runs out of memory) before the timing is
reported and left out of G. A candidate that cannot be constructed stops the bench with a ValueError.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import asdict, dataclass
from typing import Callable

import torch

from ssmkit.harness.candidate import load_granite_candidate
from ssmkit.harness.granite_run import build_layer, make_inputs, slice_from_path
from ssmkit.harness.report import device_name, emit, format_table, plot_bench, run_metadata, write_json
from ssmkit.harness.timing import (geomean, paired_abba, peak_memory_bytes, reset_peak_memory, score_from_geomean,
                                   synchronize)
from ssmkit.harness.workloads import (CPU_NOTE, PREFILL, Workload, default_workloads_path, load_workloads,
                                      resolve_device, select)

ROTATIONS = 3
#: A/B/B/A pairs per workload on CUDA. 4 until session 22, when the candidate's decode rows moved by up to 2x between
#: runs of the same code (B=8: 0.047-0.097 ms over sessions 11-21, while a same-process A/B of 400 calls measured
#: 49.6 us, bench/granite/NOTES.md "Session 22"): the median of 4 per-pair medians follows a host's slow stretches.
#: 16 pairs cost little: a whole bench run took 13-14 s end to end at either count (session 22 run 2; the
#: reference's calls take 1-24 ms each).
CUDA_PAIRS = 16


@dataclass
class BenchRow:
    """One workload's result; times in ms (medians), ``error`` names what failed (else None)."""

    name: str
    kind: str
    batch: int
    seqlen: int
    reference_ms: float | None = None
    candidate_ms: float | None = None
    speedup: float | None = None
    spread: float | None = None
    peak_mem_bytes: int | None = None
    reference_peak_mem_bytes: int | None = None
    error: str | None = None


def describe_failure(exc: BaseException, stage: str) -> str:
    """One line: 'out of memory' or the exception type, the stage, and the first line of the message."""
    kind = "out of memory" if isinstance(exc, torch.cuda.OutOfMemoryError) else type(exc).__name__
    first = (str(exc).splitlines() or [""])[0][:200]
    return f"{kind} in {stage}: {first}"


def restore_cache(working, pristine) -> None:
    """Reset ``working`` to the state of ``pristine`` in place (tensors keep their addresses), flags included."""
    working.conv_state.copy_(pristine.conv_state)
    working.ssm_state.copy_(pristine.ssm_state)
    working.has_previous_state = pristine.has_previous_state
    working.seqlen_offset = pristine.seqlen_offset


def timed_side(layer, w: Workload, input_sets: list) -> tuple[Callable, Callable]:
    """``(prepare, call)`` of one layer on workload ``w``, rotating over ``input_sets`` (see module docstring)."""
    rotation = itertools.count()
    if w.kind == PREFILL:
        def prepare():
            inputs = input_sets[next(rotation) % len(input_sets)]
            return inputs.hidden, inputs.mask

        def call(args):
            return layer(args[0], attention_mask=args[1])
    else:
        states = []
        for inputs in input_sets:
            _, pristine = layer(inputs.prefix)
            states.append((pristine, pristine.clone(), inputs.tokens[0]))

        def prepare():
            pristine, working, token = states[next(rotation) % len(states)]
            restore_cache(working, pristine)
            return token, working

        def call(args):
            return layer(args[0], cache=args[1])
    return prepare, call


def _peak(side: tuple[Callable, Callable], device) -> int | None:
    prepare, call = side
    args = prepare()
    synchronize(device)
    reset_peak_memory(device)
    call(args)
    synchronize(device)
    return peak_memory_bytes(device)


def bench_workload(w: Workload, reference, candidate, hidden_size: int, device, pairs: int, inner: int,
                   warmup: int) -> BenchRow:
    """Time one workload (see the module docstring); failures are recorded in ``row.error``."""
    row = BenchRow(w.name, w.kind, w.batch, w.seqlen)
    stage = "inputs"
    try:
        with torch.no_grad():
            input_sets = [make_inputs(w, hidden_size, device, torch.bfloat16, r) for r in range(ROTATIONS)]
            stage = "reference"
            ref_side = timed_side(reference, w, input_sets)
            row.reference_peak_mem_bytes = _peak(ref_side, device)
            stage = "candidate"
            cand_side = timed_side(candidate, w, input_sets)
            row.peak_mem_bytes = _peak(cand_side, device)
            stage = "timing"
            timing = paired_abba(ref_side, cand_side, device, pairs=pairs, inner_b=inner, warmup=warmup)
    except Exception as exc:  # OOM included: reported per workload, never a crash of the bench
        row.error = describe_failure(exc, stage)
        if stage in ("candidate", "timing"):
            row.speedup = 0.0
        return row
    finally:
        if torch.device(device).type == "cuda":
            torch.cuda.empty_cache()
    row.reference_ms, row.candidate_ms = timing.a_median_ms, timing.b_median_ms
    row.speedup, row.spread = timing.speedup, timing.spread
    return row


def bench_granite(candidate_cls: type, workloads: list[Workload], layer_slice, device, pairs: int = 4,
                  inner: int = 1, warmup: int = 1, progress: Callable[[str], None] = emit) -> dict:
    """Bench ``candidate_cls`` against ReferenceMambaLayer on the bench workloads of ``workloads``.

    Returns ``{"workloads": [BenchRow as dict], "geomean": G or None, "score": float}``.
    """
    from ssmkit.granite import ReferenceMambaLayer

    todo = select(workloads, "bench")
    if not todo:
        raise ValueError("no workload with purpose 'bench' to time")
    hidden_size = layer_slice.config.hidden_size
    reference = build_layer(ReferenceMambaLayer, layer_slice, device, torch.bfloat16)
    try:
        candidate = build_layer(candidate_cls, layer_slice, device, torch.bfloat16)
    except Exception as exc:
        raise ValueError(f"the candidate could not be built: {type(exc).__name__}: {exc}") from exc
    rows = []
    for i, w in enumerate(todo, 1):
        t0 = time.perf_counter()
        row = bench_workload(w, reference, candidate, hidden_size, device, pairs, inner, warmup)
        rows.append(row)
        summary = row.error or (f"reference {row.reference_ms:.3f} ms, candidate {row.candidate_ms:.3f} ms, "
                                f"speedup {row.speedup:.3f}x")
        progress(f"[{i}/{len(todo)}] {w.name}: {summary} ({time.perf_counter() - t0:.1f} s)")
    speedups = [r.speedup for r in rows if r.speedup is not None]
    g = geomean(speedups) if speedups else None
    return {"workloads": [asdict(r) for r in rows], "geomean": g, "score": score_from_geomean(g) if g else 0.0}


def bench_command(candidate: str | None = None, workloads: str | None = None, slice_path: str | None = None,
                  device: str | None = None, json_out: str | None = None, plot: str | None = None,
                  reps: int | None = None, inner: int | None = None, argv: list[str] | None = None,
                  out: Callable[[str], None] = emit) -> int:
    """``ssmkit granite bench``: time, print the table, write JSON and the plot; 0 unless a workload failed.

    ``reps``: A/B/B/A pairs per workload (default ``CUDA_PAIRS`` on CUDA, 4 on the CPU); ``inner``: candidate calls
    per pair (default 5 on CUDA, 1 on the CPU); warm-up: 2 calls per side on CUDA (Triton autotuning), 1 on the CPU.
    """
    device = resolve_device(device)
    on_cuda = torch.device(device).type == "cuda"
    workloads_path = workloads or default_workloads_path(device)
    if not on_cuda:
        out(CPU_NOTE)
    todo = load_workloads(workloads_path)
    candidate_cls = load_granite_candidate(candidate)
    layer_slice = slice_from_path(slice_path)
    pairs = reps if reps is not None else (CUDA_PAIRS if on_cuda else 4)
    inner = inner if inner is not None else (5 if on_cuda else 1)
    warmup = 2 if on_cuda else 1
    out(f"granite bench: candidate {candidate or 'ReferenceMambaLayer (default)'} vs ReferenceMambaLayer, "
        f"workloads {workloads_path}, device {device} ({device_name(device)}), {pairs} pairs x {inner} candidate "
        f"calls, warm-up {warmup}")
    result = bench_granite(candidate_cls, todo, layer_slice, device, pairs, inner, warmup, progress=out)
    rows = result["workloads"]
    out(format_table(["workload", "reference_ms", "candidate_ms", "speedup", "spread", "peak_mem_MiB", "error"],
                     [[r["name"], r["reference_ms"], r["candidate_ms"], r["speedup"], r["spread"],
                       None if r["peak_mem_bytes"] is None else r["peak_mem_bytes"] / 2**20, r["error"]]
                      for r in rows]))
    g = result["geomean"]
    out(f"granite bench: geomean speedup G = {'-' if g is None else f'{g:.4f}'}, score = {result['score']:.4f}")
    meta = run_metadata(argv, device)
    if json_out:
        write_json(json_out, {**meta, "candidate": candidate, "workloads_file": str(workloads_path),
                              "slice": slice_path, "pairs": pairs, "inner": inner, "warmup": warmup,
                              "rotations": ROTATIONS, **result})
        out(f"wrote {json_out}")
    if plot:
        plot_bench(rows, f"granite bench on {meta['gpu']}: G = {'-' if g is None else f'{g:.3f}'}, "
                         f"score {result['score']:.3f} ({(meta['git_commit'] or 'no commit')[:10]})"[:110], plot)
        out(f"wrote {plot}")
    return 1 if any(r["error"] for r in rows) else 0
