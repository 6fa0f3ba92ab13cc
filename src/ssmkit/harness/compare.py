"""Error metrics, calibrated tolerances, contract checks and digests (the one place Granite tolerances live).

Calibration (Granite verify, and the judge): every quantity is compared against ``truth``, the same math run in
float32 (the reference layer with fp32 weights and inputs: each bf16 cast of the spec becomes an fp32 cast). The
bf16 reference's own error against that truth, ``e_ref``, measures how much bf16 rounding alone moves the quantity
at this workload. A candidate passes a metric when

    e_cand <= MULTIPLE * e_ref + FLOOR                      (tensor metrics: rel_l2, max_rel)
    kl_cand <= KL_MULTIPLE * kl_ref + KL_FLOOR              (readout KL divergence against the fp32 softmax)

KL grows with the square of a logit perturbation, hence ``KL_MULTIPLE = MULTIPLE ** 2``. The floors only matter
when the reference's error is (near) zero; they are far below bf16 resolution.

Metrics (computed in float64):
- ``rel_l2``: ||x - truth||_2 / ||truth||_2 over the whole tensor (the typical error);
- ``max_rel``: max |x - truth| / max |truth| (catches a localised error, e.g. one wrong row or position);
- ``kl``: max over rows of KL(softmax(truth) || softmax(x)) for (rows, vocab) logits.

Mamba-3 tolerances live in ``ssmkit.mamba3.tolerances`` (its ``compare_results``); this module provides the
contract checks (shape, dtype, device, finite) and digests used by both tracks.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Iterable, Mapping

import torch

MULTIPLE = 2.0
FLOOR = 1e-6
KL_MULTIPLE = MULTIPLE**2
KL_FLOOR = 1e-9

TENSOR_METRICS = ("rel_l2", "max_rel")
TOLERANCE_RULE = {"multiple": MULTIPLE, "floor": FLOOR, "kl_multiple": KL_MULTIPLE, "kl_floor": KL_FLOOR,
                  "rule": "error_vs_fp32 <= multiple * reference_error_vs_fp32 + floor (kl: kl_multiple, kl_floor)"}


@dataclass
class Check:
    """One row of a verdict table. ``error``/``bound`` are None for pass/fail contract checks."""

    workload: str
    quantity: str
    error: float | None
    bound: float | None
    ok: bool
    note: str = ""

    def as_dict(self) -> dict:
        return {"workload": self.workload, "quantity": self.quantity, "error": self.error, "bound": self.bound,
                "ok": self.ok, "note": self.note}


def rel_l2_error(x: torch.Tensor, truth: torch.Tensor) -> float:
    """||x - truth|| / ||truth|| in float64 (inf if x is not finite; absolute error if truth is all zero)."""
    x64, t64 = x.detach().double(), truth.detach().double()
    if not torch.isfinite(x64).all():
        return math.inf
    denom = torch.linalg.vector_norm(t64).item()
    return torch.linalg.vector_norm(x64 - t64).item() / (denom if denom > 0 else 1.0)


def max_rel_error(x: torch.Tensor, truth: torch.Tensor) -> float:
    """max |x - truth| / max |truth| in float64 (inf if x is not finite; absolute error if truth is all zero)."""
    x64, t64 = x.detach().double(), truth.detach().double()
    if not torch.isfinite(x64).all():
        return math.inf
    denom = t64.abs().max().item() if t64.numel() else 0.0
    return (x64 - t64).abs().max().item() / (denom if denom > 0 else 1.0) if x64.numel() else 0.0


def kl_divergence_max(truth_logits: torch.Tensor, logits: torch.Tensor) -> float:
    """max over rows of KL(softmax(truth_logits) || softmax(logits)), float64; logits (rows, vocab)."""
    if truth_logits.shape != logits.shape or truth_logits.dim() != 2:
        raise ValueError(f"expected two (rows, vocab) logits of one shape, got {tuple(truth_logits.shape)} "
                         f"and {tuple(logits.shape)}")
    if not torch.isfinite(logits).all():
        return math.inf
    log_p = torch.log_softmax(truth_logits.detach().double(), dim=-1)
    log_q = torch.log_softmax(logits.detach().double(), dim=-1)
    return (log_p.exp() * (log_p - log_q)).sum(-1).max().item()


_METRICS = {"rel_l2": rel_l2_error, "max_rel": max_rel_error}


def calibrated_checks(workload: str, quantity: str, candidate: torch.Tensor, reference: torch.Tensor,
                      truth: torch.Tensor) -> list[Check]:
    """``rel_l2`` and ``max_rel`` checks of ``candidate`` vs ``truth``, bounded by the reference's own errors."""
    checks = []
    for metric in TENSOR_METRICS:
        fn = _METRICS[metric]
        e_ref, e_cand = fn(reference, truth), fn(candidate, truth)
        bound = MULTIPLE * e_ref + FLOOR
        checks.append(Check(workload, f"{quantity}.{metric}", e_cand, bound, e_cand <= bound,
                            f"reference {e_ref:.3e}"))
    return checks


def calibrated_kl_check(workload: str, quantity: str, candidate_logits: torch.Tensor,
                        reference_logits: torch.Tensor, truth_logits: torch.Tensor) -> Check:
    """KL of the candidate's readout softmax vs the fp32 one, bounded by the reference's KL vs fp32."""
    kl_ref = kl_divergence_max(truth_logits, reference_logits)
    kl_cand = kl_divergence_max(truth_logits, candidate_logits)
    bound = KL_MULTIPLE * kl_ref + KL_FLOOR
    return Check(workload, quantity, kl_cand, bound, kl_cand <= bound, f"reference {kl_ref:.3e}")


def contract_check(workload: str, quantity: str, candidate, reference: torch.Tensor) -> Check:
    """Is ``candidate`` a finite tensor with the reference's shape, dtype and device? One pass/fail row."""
    problems = []
    if not isinstance(candidate, torch.Tensor):
        problems.append(f"expected a torch.Tensor, got {type(candidate).__name__}")
    else:
        if candidate.shape != reference.shape:
            problems.append(f"shape {tuple(candidate.shape)} != expected {tuple(reference.shape)}")
        if candidate.dtype != reference.dtype:
            problems.append(f"dtype {candidate.dtype} != expected {reference.dtype}")
        if candidate.device != reference.device:
            problems.append(f"device {candidate.device} != expected {reference.device}")
        if candidate.is_floating_point() and not torch.isfinite(candidate).all():
            problems.append("contains NaN or Inf")
    return Check(workload, f"{quantity}.contract", None, None, not problems, "; ".join(problems))


def tensor_digest(t: torch.Tensor) -> str:
    """sha256 of a tensor's dtype, shape and raw bytes (hex)."""
    h = hashlib.sha256(f"{t.dtype}|{tuple(t.shape)}|".encode())
    data = t.detach().contiguous().cpu()
    if data.numel():
        h.update(data.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def digest_all(tensors: Mapping[str, torch.Tensor] | Iterable[torch.Tensor]) -> str:
    """One sha256 over several tensors (a mapping is hashed in key order with its keys; None entries allowed)."""
    items = sorted(tensors.items()) if isinstance(tensors, Mapping) else enumerate(tensors)
    h = hashlib.sha256()
    for key, t in items:
        h.update(f"{key}:{'none' if t is None else tensor_digest(t)};".encode())
    return h.hexdigest()
