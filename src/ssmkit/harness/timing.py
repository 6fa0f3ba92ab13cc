"""Timing primitives shared by the benches and the judge: one timed call, paired A/B/B/A runs, medians, geomean, score.

A *timed call* is split in two: ``prepare()`` runs outside the timed region (e.g. cloning a decode cache, which the
call mutates) and returns the argument of ``call(prepared)``, which is the only thing timed. On CUDA a call is
timed with CUDA events around it (the device is synchronised before the start event, so earlier work does not
leak in); on the CPU with ``time.perf_counter`` between two synchronisations.

Paired timing (``paired_abba``): after warm-up, pair i runs A then B when i is even and B then A when i is odd
(the A/B/B/A interleave), so slow drifts (clocks, thermals, other load) hit both sides alike; an even number of
pairs also lets each side go first equally often (the defaults are even). Each pair gives a
ratio ``a_ms / b_ms``; the speedup of B over A is the median of those ratios. Side B may be called ``inner_b``
times per pair (its time in that pair is the median of those calls), which lets a slow baseline (A) keep few
repetitions while the faster candidate (B) gets more.

Scores: ``geomean`` of per-workload speedups G; the Granite score is ``1 - 1/G`` when G > 1 and 0 otherwise
(``score_from_geomean``).
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

Prepare = Callable[[], Any]
Call = Callable[[Any], Any]


def synchronize(device: torch.device | str) -> None:
    """Wait for all queued work on ``device`` (a no-op on the CPU)."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def time_call(prepare: Prepare, call: Call, device: torch.device | str) -> float:
    """Run ``call(prepare())`` once and return the time of ``call`` alone, in milliseconds.

    CUDA: events recorded on the current stream around the call, after a synchronisation. CPU: wall clock
    (``time.perf_counter``) between synchronisations. The result of ``call`` is dropped.
    """
    prepared = prepare()
    dev = torch.device(device)
    synchronize(dev)
    if dev.type == "cuda":
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        call(prepared)
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end))
    t0 = time.perf_counter()
    call(prepared)
    synchronize(dev)
    return (time.perf_counter() - t0) * 1e3


def abba_schedule(pairs: int) -> list[tuple[str, str]]:
    """Order of the two sides in each pair: ``("a", "b")`` for even pairs, ``("b", "a")`` for odd ones."""
    if pairs < 1:
        raise ValueError(f"pairs must be >= 1, got {pairs}")
    return [("a", "b") if i % 2 == 0 else ("b", "a") for i in range(pairs)]


@dataclass
class PairedTiming:
    """Result of ``paired_abba``: per-pair times (ms) of both sides and the per-pair ratios ``a_ms / b_ms``."""

    a_ms: list[float] = field(default_factory=list)
    b_ms: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)

    @property
    def a_median_ms(self) -> float:
        return statistics.median(self.a_ms)

    @property
    def b_median_ms(self) -> float:
        return statistics.median(self.b_ms)

    @property
    def speedup(self) -> float:
        """Median of the per-pair ratios: how many times faster side B is than side A."""
        return statistics.median(self.ratios)

    @property
    def spread(self) -> float:
        """Relative spread of the ratios, (max - min) / median: a flag for unstable timing."""
        return (max(self.ratios) - min(self.ratios)) / self.speedup


def paired_abba(
    a: tuple[Prepare, Call],
    b: tuple[Prepare, Call],
    device: torch.device | str,
    pairs: int = 4,
    inner_b: int = 1,
    warmup: int = 1,
) -> PairedTiming:
    """Paired A/B/B/A timing of two ``(prepare, call)`` sides on ``device``.

    ``warmup`` untimed calls of each side run first (Triton compiles and autotunes there). Then ``pairs`` pairs
    follow ``abba_schedule``; side A is called once per pair, side B ``inner_b`` times (median taken).
    """
    if inner_b < 1 or warmup < 0:
        raise ValueError(f"inner_b must be >= 1 and warmup >= 0, got inner_b={inner_b}, warmup={warmup}")
    for prepare, call in (a, b):
        for _ in range(warmup):
            call(prepare())
    synchronize(device)
    result = PairedTiming()
    for order in abba_schedule(pairs):
        times: dict[str, float] = {}
        for side in order:
            if side == "a":
                times["a"] = time_call(*a, device)
            else:
                times["b"] = statistics.median(time_call(*b, device) for _ in range(inner_b))
        result.a_ms.append(times["a"])
        result.b_ms.append(times["b"])
        result.ratios.append(times["a"] / max(times["b"], 1e-9))
    return result


def median_time(prepare: Prepare, call: Call, device: torch.device | str, reps: int = 5, warmup: int = 1) -> float:
    """Median over ``reps`` timed calls (ms) after ``warmup`` untimed ones."""
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    for _ in range(warmup):
        call(prepare())
    return statistics.median(time_call(prepare, call, device) for _ in range(reps))


def geomean(values: Sequence[float]) -> float:
    """Geometric mean of positive numbers; 0.0 if any value is 0 (a failed workload); ValueError if empty."""
    if not values:
        raise ValueError("geomean of an empty sequence")
    if any(v < 0 or math.isnan(v) for v in values):
        raise ValueError(f"geomean needs non-negative numbers, got {list(values)}")
    if any(v == 0 for v in values):
        return 0.0
    return math.exp(sum(math.log(v) for v in values) / len(values))


def score_from_geomean(g: float) -> float:
    """Granite score: ``1 - 1/G`` when the geometric-mean speedup G > 1, else 0."""
    return 1.0 - 1.0 / g if g > 1.0 else 0.0


def reset_peak_memory(device: torch.device | str) -> None:
    """Reset CUDA's peak-memory counter (no-op on the CPU)."""
    if torch.device(device).type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_memory_bytes(device: torch.device | str) -> int | None:
    """``torch.cuda.max_memory_allocated`` since the last reset; None on the CPU (not measured there)."""
    if torch.device(device).type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    return None
