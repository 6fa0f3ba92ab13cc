"""``ssmkit granite verify``: a candidate layer against the reference on every correctness workload.

For each workload with ``purpose == "correctness"``:
1. ``truth``: the reference layer with float32 weights (the slice's bf16 weights upcast) on float32 inputs (the
   bf16 inputs upcast), TF32 off (``ieee_fp32``): the same math in fp32; its readout uses fp32 final-norm and
   embedding weights.
2. ``reference``: the reference layer in bf16 on the bf16 inputs; its error vs ``truth`` calibrates the bounds.
3. ``candidate``: the candidate layer in bf16, same weights and inputs.
Checks per quantity (outputs, continuation outputs, conv_state, ssm_state, logits; see ``granite_run``):
``<q>.contract`` (shape, dtype, device, finite, as the reference's), ``<q>.rel_l2`` and ``<q>.max_rel`` within
``ssmkit.harness.compare``'s calibrated bounds, and ``kl`` of the readout softmax; plus ``cache.in_place``
(continuing calls update the given cache in place and return it), ``inputs.unchanged`` (the candidate left its
inputs bit-identical) and ``run`` (the candidate raised). The fp32 run is freed after each workload.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import torch

from ssmkit.harness.candidate import load_granite_candidate
from ssmkit.harness.compare import (TOLERANCE_RULE, Check, calibrated_checks, calibrated_kl_check, contract_check,
                                    digest_all)
from ssmkit.granite.reference import ieee_fp32
from ssmkit.harness.granite_run import (Readout, build_layer, cast_inputs, input_tensors, make_inputs, run_workload,
                                        slice_from_path)
from ssmkit.harness.report import emit, format_table, run_metadata, write_json
from ssmkit.harness.workloads import (CPU_NOTE, Workload, default_workloads_path, load_workloads, resolve_device,
                                      select)


@dataclass
class VerifyResult:
    """All check rows of a verify run; ``passed`` is True when every row is ok."""

    checks: list[Check] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]


def _free(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.empty_cache()


def compare_runs(name: str, candidate, reference, truth) -> list[Check]:
    """Checks of a candidate ``RunResult`` against the reference's and the fp32 truth's (same workload)."""
    checks = [Check(name, "cache.in_place", None, None, candidate.cache_in_place,
                    "" if candidate.cache_in_place else "a continuing call did not update and return the given cache")]
    for quantity, ref in reference.tensors.items():
        cand = candidate.tensors.get(quantity)
        contract = contract_check(name, quantity, cand, ref)
        checks.append(contract)
        if not contract.ok:
            continue
        tru = truth.tensors[quantity]
        checks += calibrated_checks(name, quantity, cand, ref, tru)
        if quantity == "logits":
            checks.append(calibrated_kl_check(name, "kl", cand, ref, tru))
    return checks


def verify_workload(w: Workload, candidate, reference, truth_layer, readout16: Readout, readout32: Readout,
                    device) -> list[Check]:
    """All checks of one workload (the three runs are made and freed here)."""
    hidden_size = readout16.final_norm.shape[0]
    inputs = make_inputs(w, hidden_size, device, torch.bfloat16)
    with ieee_fp32(torch.device(device).type == "cuda"):  # the readout's fp32 matmul too
        truth = run_workload(truth_layer, w, cast_inputs(inputs, torch.float32), readout32)
    ref = run_workload(reference, w, inputs, readout16)
    before = digest_all(input_tensors(inputs))
    try:
        cand = run_workload(candidate, w, inputs, readout16)
    except Exception as exc:  # the candidate's failure is a verdict, not a crash of the harness
        return [Check(w.name, "run", None, None, False, f"{type(exc).__name__}: {exc}")]
    unchanged = digest_all(input_tensors(inputs)) == before
    checks = [Check(w.name, "inputs.unchanged", None, None, unchanged, "" if unchanged else "inputs were modified")]
    return checks + compare_runs(w.name, cand, ref, truth)


def verify_granite(candidate_cls: type, workloads: list[Workload], layer_slice, device,
                   progress: Callable[[str], None] = emit) -> VerifyResult:
    """Verify ``candidate_cls`` (the CandidateBlock class) on the correctness workloads of ``workloads``.

    ``layer_slice``: a ``LayerSlice`` (weights, final norm, embedding, config). Prints one progress line per
    workload through ``progress``.
    """
    from ssmkit.granite import ReferenceMambaLayer

    result = VerifyResult()
    todo = select(workloads, "correctness")
    if not todo:
        raise ValueError("no workload with purpose 'correctness' to verify")
    try:
        candidate = build_layer(candidate_cls, layer_slice, device, torch.bfloat16)
    except Exception as exc:
        result.checks.append(Check("-", "build", None, None, False, f"{type(exc).__name__}: {exc}"))
        return result
    reference = build_layer(ReferenceMambaLayer, layer_slice, device, torch.bfloat16)
    truth_layer = build_layer(ReferenceMambaLayer, layer_slice, device, torch.float32)
    readout16 = Readout.from_slice(layer_slice, device)
    readout32 = Readout.from_slice(layer_slice, device, torch.float32)
    for i, w in enumerate(todo, 1):
        t0 = time.perf_counter()
        checks = verify_workload(w, candidate, reference, truth_layer, readout16, readout32, device)
        result.checks += checks
        bad = [c.quantity for c in checks if not c.ok]
        progress(f"[{i}/{len(todo)}] {w.name}: {len(checks)} checks, "
                 f"{'all ok' if not bad else 'FAILED ' + ', '.join(bad)} ({time.perf_counter() - t0:.1f} s)")
        _free(device)
    return result


def verify_command(candidate: str | None = None, workloads: str | None = None, slice_path: str | None = None,
                   device: str | None = None, json_out: str | None = None, argv: list[str] | None = None,
                   out: Callable[[str], None] = emit) -> int:
    """``ssmkit granite verify``: run, print the table and the verdict, write JSON; 0 when all checks pass, else 1.

    Defaults: the reference as candidate, ``workloads.json`` on CUDA / ``workloads_cpu.json`` on the CPU, the
    synthetic slice of the real config (seed 0), CUDA when available.
    """
    device = resolve_device(device)
    workloads_path = workloads or default_workloads_path(device)
    if workloads is None and torch.device(device).type == "cpu":
        out(CPU_NOTE)
    todo = load_workloads(workloads_path)
    candidate_cls = load_granite_candidate(candidate)
    layer_slice = slice_from_path(slice_path)
    out(f"granite verify: candidate {candidate or 'ReferenceMambaLayer (default)'}, workloads {workloads_path}, "
        f"slice {slice_path or 'synthetic (real config, seed 0)'}, device {device}")
    result = verify_granite(candidate_cls, todo, layer_slice, device, progress=out)
    out(format_table(["workload", "quantity", "error", "bound", "ok", "note"],
                     [[c.workload, c.quantity, c.error, c.bound, c.ok, c.note] for c in result.checks]))
    failed = result.failures
    out(f"granite verify: {'PASS' if result.passed else 'FAIL'}: {len(result.checks) - len(failed)} of "
        f"{len(result.checks)} checks ok" + (f"; failed: {', '.join(f'{c.workload}/{c.quantity}' for c in failed)}"
                                            if failed else ""))
    if json_out:
        write_json(json_out, {
            **run_metadata(argv, device), "candidate": candidate, "workloads_file": str(workloads_path),
            "slice": slice_path, "tolerance": TOLERANCE_RULE, "passed": result.passed,
            "checks": [c.as_dict() for c in result.checks]})
        out(f"wrote {json_out}")
    return 0 if result.passed else 1
