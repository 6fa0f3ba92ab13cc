"""``ssmkit mamba3 selfcheck``: a solver of the Mamba-3 operator against the eager fp32 baseline, then timed.

Per case (inputs from ``ssmkit.mamba3.inputs.make_inputs(seqlens, seed, device)``, the 17 arguments in call order):
- ``run``: the solver returns without raising; ``results.count``: it returns 16 results;
- ``<result>.contract``: each result is a finite tensor with the baseline's shape, dtype and device;
- ``<result>.error``: within ``ssmkit.mamba3.tolerances.compare_results`` (the tolerance table of the track);
- ``inputs.unchanged``: the 17 inputs are bit-identical after the call (sha256 digests);
- ``fresh_call.identical``: a second call on the same inputs returns bit-identical results.
Cases whose checks all pass are then timed: ``paired_abba`` of the eager baseline (A,
``mamba3_siso_varlen_joint_states_full_vjp_reference``) against the solver (B), median of per-pair ratios as the
case speedup; the summary is their geometric mean G. The score is G, or 0 when any check failed (named in
``failures``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import torch

from ssmkit.harness.candidate import load_mamba3_solver
from ssmkit.harness.compare import Check, contract_check, digest_all
from ssmkit.harness.report import device_name, emit, format_table, run_metadata, write_json
from ssmkit.harness.timing import geomean, paired_abba
from ssmkit.harness.workloads import (CPU_CASES, CPU_LENGTH_DIVISOR, CPU_NOTE, Case, cpu_cases, default_cases_path,
                                      load_cases, resolve_device)


@dataclass
class CaseResult:
    """Checks of one case and, when they all passed, its timing (ms medians, speedup = baseline / solver)."""

    name: str
    seqlens: tuple[int, ...]
    checks: list[Check] = field(default_factory=list)
    baseline_ms: float | None = None
    solver_ms: float | None = None
    speedup: float | None = None
    spread: float | None = None

    @property
    def passed(self) -> bool:
        return all(c.ok for c in self.checks)


def call_args(inputs: dict) -> list[torch.Tensor]:
    """The operator's 17 arguments in call order (inputs, then cotangents) from ``make_inputs``' dict."""
    from ssmkit.mamba3.shapes import COTANGENT_NAMES, INPUT_NAMES

    return [inputs[name] for name in INPUT_NAMES + COTANGENT_NAMES]


def check_results(case: str, results, reference: tuple) -> list[Check]:
    """Count, per-result contract and tolerance checks of a solver's results against the baseline's."""
    from ssmkit.mamba3.shapes import RESULT_NAMES
    from ssmkit.mamba3.tolerances import compare_results

    if not isinstance(results, (tuple, list)) or len(results) != len(RESULT_NAMES):
        got = len(results) if isinstance(results, (tuple, list)) else type(results).__name__
        return [Check(case, "results.count", None, None, False, f"expected {len(RESULT_NAMES)} results, got {got}")]
    checks = [contract_check(case, name, r, ref) for name, r, ref in zip(RESULT_NAMES, results, reference)]
    if not all(c.ok for c in checks):
        return checks
    for name, error, bound, ok in compare_results(tuple(results), tuple(reference)):
        checks.append(Check(case, f"{name}.error", float(error), float(bound), bool(ok)))
    return checks


def identical(a, b) -> bool:
    """Two result sequences with bit-identical tensors (same dtype, shape and bytes)."""
    return len(a) == len(b) and all(
        x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y) for x, y in zip(a, b))


def selfcheck_case(case: Case, solver: Callable, device, pairs: int, warmup: int) -> CaseResult:
    """All checks of one case, then its paired timing when they passed."""
    from ssmkit.mamba3.inputs import make_inputs
    from ssmkit.mamba3.reference import mamba3_siso_varlen_joint_states_full_vjp_reference as baseline

    result = CaseResult(case.name, case.seqlens)
    inputs = make_inputs(list(case.seqlens), case.seed, device)
    args = call_args(inputs)
    reference = baseline(*args)
    before = digest_all(inputs)
    try:
        first = solver(*args)
    except Exception as exc:  # the solver's failure is a verdict, not a crash of the selfcheck
        result.checks.append(Check(case.name, "run", None, None, False, f"{type(exc).__name__}: {exc}"))
        return result
    unchanged = digest_all(inputs) == before
    result.checks.append(Check(case.name, "inputs.unchanged", None, None, unchanged,
                               "" if unchanged else "the solver modified its inputs"))
    result.checks += check_results(case.name, first, reference)
    if not result.passed:
        return result
    same = identical(first, solver(*args))
    result.checks.append(Check(case.name, "fresh_call.identical", None, None, same,
                               "" if same else "a second call on the same inputs gave different results"))
    if not result.passed:
        return result
    timing = paired_abba((lambda: args, lambda a: baseline(*a)), (lambda: args, lambda a: solver(*a)), device,
                         pairs=pairs, warmup=warmup)
    result.baseline_ms, result.solver_ms = timing.a_median_ms, timing.b_median_ms
    result.speedup, result.spread = timing.speedup, timing.spread
    return result


def selfcheck_mamba3(solver: Callable, cases: list[Case], device, pairs: int = 4, warmup: int = 1,
                     progress: Callable[[str], None] = emit) -> dict:
    """Run every case; returns ``{"cases": [CaseResult], "failures": [Check], "geomean", "score"}``."""
    if not cases:
        raise ValueError("no Mamba-3 case to check")
    results = []
    for i, case in enumerate(cases, 1):
        t0 = time.perf_counter()
        r = selfcheck_case(case, solver, device, pairs, warmup)
        results.append(r)
        bad = [c.quantity for c in r.checks if not c.ok]
        summary = (f"FAILED {', '.join(bad)}" if bad else
                   f"ok, baseline {r.baseline_ms:.2f} ms, solver {r.solver_ms:.2f} ms, speedup {r.speedup:.3f}x")
        progress(f"[{i}/{len(cases)}] {case.name} (T={sum(case.seqlens)}): {summary} "
                 f"({time.perf_counter() - t0:.1f} s)")
    failures = [c for r in results for c in r.checks if not c.ok]
    g = None if failures else geomean([r.speedup for r in results])
    return {"cases": results, "failures": failures, "geomean": g, "score": 0.0 if failures else g}


def selfcheck_command(solver: str | None = None, cases: str | None = None, device: str | None = None,
                      json_out: str | None = None, reps: int | None = None, argv: list[str] | None = None,
                      out: Callable[[str], None] = emit) -> int:
    """``ssmkit mamba3 selfcheck``: run, print tables and the verdict, write JSON; 0 when every check passed.

    Defaults: the package's entry as solver, ``cases.json`` on CUDA and on the CPU its small version
    (``workloads.cpu_cases``), CUDA when available, ``reps`` = 6 pairs on CUDA and 2 on the CPU.
    """
    device = resolve_device(device)
    on_cuda = torch.device(device).type == "cuda"
    cases_path = cases or default_cases_path()
    todo = load_cases(cases_path)
    if cases is None and not on_cuda:
        todo = cpu_cases(todo)
        out(f"{CPU_NOTE} (first {CPU_CASES} cases of {cases_path.name}, lengths / {CPU_LENGTH_DIVISOR})")
    solver_fn = load_mamba3_solver(solver)
    pairs = reps if reps is not None else (6 if on_cuda else 2)
    out(f"mamba3 selfcheck: solver {solver or 'ssmkit.mamba3 (default)'}, cases {cases_path}, device {device} "
        f"({device_name(device)}), {pairs} pairs")
    result = selfcheck_mamba3(solver_fn, todo, device, pairs=pairs, warmup=2 if on_cuda else 1, progress=out)
    checks = [c for r in result["cases"] for c in r.checks]
    out(format_table(["case", "check", "error", "bound", "ok", "note"],
                     [[c.workload, c.quantity, c.error, c.bound, c.ok, c.note] for c in checks]))
    out(format_table(["case", "T", "baseline_ms", "solver_ms", "speedup", "spread"],
                     [[r.name, sum(r.seqlens), r.baseline_ms, r.solver_ms, r.speedup, r.spread]
                      for r in result["cases"]]))
    failures = result["failures"]
    g = result["geomean"]
    out(f"mamba3 selfcheck: {'PASS' if not failures else 'FAIL'}: geomean speedup "
        f"{'-' if g is None else f'{g:.4f}'}, score {result['score']:.4f}"
        + (f"; failed: {', '.join(f'{c.workload}/{c.quantity}' for c in failures)}" if failures else ""))
    if json_out:
        write_json(json_out, {
            **run_metadata(argv, device), "solver": solver, "cases_file": str(cases_path), "pairs": pairs,
            "passed": not failures, "geomean": g, "score": result["score"],
            "failures": [c.as_dict() for c in failures],
            "cases": [{"name": r.name, "seqlens": list(r.seqlens), "baseline_ms": r.baseline_ms,
                       "solver_ms": r.solver_ms, "speedup": r.speedup, "spread": r.spread,
                       "checks": [c.as_dict() for c in r.checks]} for r in result["cases"]]})
        out(f"wrote {json_out}")
    return 0 if not failures else 1
