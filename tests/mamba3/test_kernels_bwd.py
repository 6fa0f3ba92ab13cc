"""Backward kernels (ssmkit.kernels.mamba3.bwd) against the float64 token-recurrence oracle (spec §5, §7.1).

Runs the Triton kernels in the CPU interpreter when there is no GPU (tests/conftest.py). The panel has ragged
sequences: 64 tokens (one full chunk, so that chunk slot 1 maps to no chunk: the empty slot's partial sums must be
written as zeros), 130 (three chunks, two chunk edges), lengths 1 and 2, and 65 (one token in its second chunk).
The interpreter computes fp32 dots exactly but casts fp32 -> bf16 by truncation (the GPU rounds to nearest), so bf16
results are checked element-wise against one bf16 rounding step in either direction: |x - ref| <= 2^-7 |ref| + atol.
"""
import math
import os
from contextlib import contextmanager

import pytest
import torch

from ssmkit.kernels.mamba3.bwd import Mamba3BwdConfig, mamba3_siso_bwd
from ssmkit.kernels.mamba3.fwd import mamba3_siso_fwd
from ssmkit.mamba3.inputs import make_inputs
from ssmkit.mamba3.oracle import mamba3_siso_varlen_joint_states_full_vjp_oracle
from ssmkit.mamba3.shapes import COTANGENT_NAMES, GRAD_NAMES, INPUT_NAMES, OUTPUT_NAMES

# These tests run the kernels in Triton's CPU interpreter on CPU tensors (exact fp32 dots there; the tolerances
# assume it). On a CUDA machine the kernels are checked by `ssmkit mamba3 selfcheck`, bench/mamba3_bench.py and the
# judge instead.
pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1",
                                reason="interpreter tests on CPU tensors (TRITON_INTERPRET=1)")

PANEL = [64, 130, 1, 2, 65]
FP32_NORM_RTOL = 1e-5  # fp32 math, exact dots in the interpreter: measured 1e-7 .. 1e-6
BF16_STEP = 2.0 ** -7  # one bf16 rounding of a value, relative, whatever the rounding direction
BF16_ATOL = 1e-5  # times max |ref|: the fp32 error under the rounding step
# Per-token gradients (first dim T) and which sequence a token belongs to, for the boundary test.
TOKEN_GRADS = ("dq", "dk", "dv", "dadt", "ddt", "dtrap", "dangles", "dz")
# The per-head dq / dk rows kept in fp32 (Mamba3BwdConfig.head_partials; the default stores them in bf16, rounded
# once per head before the head sum): the form the oracle bounds above hold for element-wise. The default form is
# checked against it (test_bwd_bf16_head_rows_differ_from_fp32_rows_by_their_rounding_alone).
FP32_ROWS = Mamba3BwdConfig(head_partials="fp32")


@contextmanager
def _each_allocation(fn, names=("empty", "empty_like")):
    """Inside, every tensor the torch allocators ``names`` return passes through ``fn`` (which returns it)."""
    with pytest.MonkeyPatch.context() as patch:
        for name in names:
            alloc = getattr(torch, name)
            patch.setattr(torch, name, lambda *a, _alloc=alloc, **kw: fn(_alloc(*a, **kw)))
        yield


@contextmanager
def poisoned_allocations():
    """Inside, every float tensor from torch.empty / torch.empty_like starts as NaN (the kernel wrappers allocate
    their outputs and buffers with them), so an element a kernel leaves unwritten shows as NaN."""
    with _each_allocation(lambda x: x.fill_(math.nan) if x.is_floating_point() else x):
        yield


@contextmanager
def recorded_head_rows(shape):
    """Inside, every tensor torch.empty allocates with ``shape`` (T, 32, 128) is appended to the yielded list: the
    backward's per-head dq and dk rows, in that order."""
    rows = []
    with _each_allocation(lambda x: rows.append(x) or x if tuple(x.shape) == tuple(shape) else x, ("empty",)):
        yield rows


@pytest.fixture(scope="module")
def panel():
    """Inputs, forward saved tensors, the float64 oracle's 11 gradients, and backward runs of the kernels: the
    default ("grads") and with the per-head dq / dk rows in fp32 ("grads_fp32", whose rows are kept in "rows"); the
    forward and the backward with NaN-poisoned allocations, so an element of a saved tensor the forward leaves
    unwritten and the backward reads shows as NaN in the gradients (the saved chunk slot no chunk maps to stays NaN:
    none of it may reach a gradient)."""
    args = make_inputs(PANEL, seed=11)
    inputs = [args[n] for n in INPUT_NAMES]
    cotangents = [args[n] for n in COTANGENT_NAMES]
    oracle = mamba3_siso_varlen_joint_states_full_vjp_oracle(**args)[len(OUTPUT_NAMES):]
    with poisoned_allocations():
        saved = mamba3_siso_fwd(*inputs)[5]
        grads = mamba3_siso_bwd(*inputs, saved, *cotangents)
        with recorded_head_rows((sum(PANEL), *args["q_bias"].shape)) as rows:
            grads_fp32 = mamba3_siso_bwd(*inputs, saved, *cotangents, config=FP32_ROWS)
    return {"args": args, "inputs": inputs, "cotangents": cotangents, "saved": saved,
            "oracle": dict(zip(GRAD_NAMES, oracle)), "grads": grads, "grads_fp32": grads_fp32, "rows": rows}


def assert_close_to_oracle(name, got, err, ref):
    """bf16 results: within one bf16 rounding step of the float64 value, element-wise; fp32: by norm."""
    if got.dtype == torch.bfloat16:
        bound = BF16_STEP * ref.abs() + BF16_ATOL * ref.abs().max()
        worst = (err.abs() - bound).max().item()
        assert worst <= 0, f"{name}: beyond one bf16 rounding of the oracle by {worst:.3e}"
    else:
        rel = (err.norm() / ref.norm()).item()
        assert rel <= FP32_NORM_RTOL, f"{name}: norm-relative error {rel:.3e} > {FP32_NORM_RTOL}"


def _run_bwd(panel, cotangents=None):
    return mamba3_siso_bwd(*panel["inputs"], panel["saved"], *(cotangents or panel["cotangents"]))


def test_bwd_gradients_match_float64_oracle_and_are_all_written(panel):
    """With the per-head dq / dk rows in fp32 (FP32_ROWS): every gradient within the oracle bounds, all written."""
    empty_slot = 1  # (the 64-token sequence's second slot: the module docstring) NaN, so the forward ran poisoned
    assert all(torch.isnan(x[empty_slot]).all() for x in (panel["saved"].chunk_states, panel["saved"].chunk_scalars,
                                                          panel["saved"].masked_scores))
    for name, got in zip(GRAD_NAMES, panel["grads_fp32"]):
        ref = panel["oracle"][name]
        want = panel["args"][name[1:]]
        assert got.dtype == want.dtype and got.shape == want.shape, name
        assert not torch.isnan(got).any(), f"{name}: elements left unwritten"
        assert_close_to_oracle(name, got, got.double() - ref, ref)


def test_bwd_bf16_head_rows_differ_from_fp32_rows_by_their_rounding_alone(panel):
    """The default form rounds each head's dq / dk row to bf16 before the fp32 head sum (head_partials "bf16"): every
    other gradient is bit-identical to the fp32-row form's, all written; dq and dk differ from that form's by at most
    the rows' rounding plus both results' own: |a - b| <= step (sum_h |row_h| + |a| + |b|) element-wise (step: one
    bf16 rounding, the interpreter truncating), and do differ (the rows were rounded)."""
    grads, fp32 = dict(zip(GRAD_NAMES, panel["grads"])), dict(zip(GRAD_NAMES, panel["grads_fp32"]))
    for name in GRAD_NAMES:
        assert not torch.isnan(grads[name]).any(), f"{name}: elements left unwritten"
        if name not in ("dq", "dk"):
            assert torch.equal(grads[name], fp32[name]), name
    assert len(panel["rows"]) == 2 and all(r.dtype == torch.float32 for r in panel["rows"])
    for name, rows in zip(("dq", "dk"), panel["rows"]):
        a, b = grads[name].double()[:, 0], fp32[name].double()[:, 0]
        mass = rows.double().abs().sum(dim=1)  # sum over the heads of |row|, (T, 128)
        bound = BF16_STEP * (mass + a.abs() + b.abs()) + 1e-6 * mass
        assert ((a - b).abs() - bound).max() <= 0, f"{name}: beyond the rows' rounding"
        assert not torch.equal(a, b), f"{name}: the bf16 rows were not used"


def test_bwd_is_bit_identical_on_repeated_calls(panel):
    for name, a, b in zip(GRAD_NAMES, panel["grads"], _run_bwd(panel)):
        assert torch.equal(a, b), f"{name} differs between two identical calls"


def test_bwd_keeps_sequences_apart(panel):
    """Zero cotangents on the middle sequences: their token gradients are exactly zero and the outer sequences'
    token gradients are bit-identical to the run with all cotangents (no carry, shift or state crosses a
    boundary in either direction)."""
    cu = panel["args"]["cu_seqlens"].tolist()
    middle = slice(cu[1], cu[3])
    dout, dfa, dfs, dfk, dfv = (x.clone() for x in panel["cotangents"])
    dout[middle] = 0
    for fin in (dfa, dfs, dfk, dfv):
        fin[1:3] = 0
    base = dict(zip(GRAD_NAMES, panel["grads"]))
    cut = dict(zip(GRAD_NAMES, _run_bwd(panel, [dout, dfa, dfs, dfk, dfv])))
    outer = torch.ones(cu[-1], dtype=torch.bool)
    outer[middle] = False
    for name in TOKEN_GRADS:
        assert torch.count_nonzero(cut[name][middle]) == 0, f"{name}: middle sequences got gradient"
        assert torch.equal(cut[name][outer], base[name][outer]), f"{name}: outer sequences changed"


@pytest.mark.parametrize("config", [
    FP32_ROWS._replace(dstate_scan=True, scan_block=2048),
    FP32_ROWS._replace(transposed_precision="tf32"),
    FP32_ROWS._replace(side_precision="tf32", side_maxnreg=168),
], ids=["scan_form", "transposed_tf32", "side_tf32"])
def test_bwd_config_variant_matches_float64_oracle_and_writes_all(panel, config):
    """The chunk-parallel state-gradient form (local terms + in-place reverse scan), and the dots with transposed
    operands at tf32 instead of split into bf16 (the default): in the intra kernel and the chain, or in the side
    kernel, give the gradients within the oracle bounds, every element written (NaN-poisoned allocations)."""
    with poisoned_allocations():
        grads = mamba3_siso_bwd(*panel["inputs"], panel["saved"], *panel["cotangents"], config=config)
    for name, got in zip(GRAD_NAMES, grads):
        ref = panel["oracle"][name]
        assert not torch.isnan(got).any(), f"{name}: elements left unwritten"
        assert_close_to_oracle(name, got, got.double() - ref, ref)


def test_dphi_carry_kernel_sums_every_later_chunk_across_tiles():
    """The angle-gradient carry entering each chunk (dfinal_angle + both planes' dPhi sums of the sequence's later
    chunks) against a float64 reverse cumsum, on sequences of 40, 16, 17, 1 and 3 chunks (several CB = 16 tiles,
    exactly one, one and a chunk, a single chunk): every slot that holds a chunk written (NaN-poisoned), the slots
    that hold none left alone."""
    from ssmkit.kernels.mamba3.bwd import _ANGLE_SLOTS, _m3b_dphi_carry_kernel
    from ssmkit.mamba3.shapes import CHUNK, NANGLES, NHEADS

    chunks = [40, 16, 17, 1, 3]
    lengths = [64 * n - (n % 3) * 7 for n in chunks]  # (some sequences end inside their last chunk)
    cu = torch.tensor([0] + lengths).cumsum(0).to(torch.int32)
    nslot = int(cu[-1]) // CHUNK + len(lengths)
    gen = torch.Generator().manual_seed(5)
    dphis = torch.randn(2, nslot, NHEADS, NANGLES, generator=gen)
    dfa = torch.randn(len(lengths), NHEADS, NANGLES, generator=gen)
    carry = torch.full((nslot, NHEADS, NANGLES), math.nan)
    _m3b_dphi_carry_kernel[(len(lengths), NHEADS)](cu, dfa, dphis, carry, nslot, H=NHEADS, NA=NANGLES, C=CHUNK,
                                                   CB=_ANGLE_SLOTS, PDL_NEXT=False, num_warps=1)
    held = torch.zeros(nslot, dtype=torch.bool)
    for s, n in enumerate(chunks):
        first = int(cu[s]) // CHUNK + s
        sums = dphis[:, first:first + n].double().sum(0)  # (n, H, NA)
        later = sums.flip(0).cumsum(0).flip(0) - sums  # chunks after each
        want = dfa[s].double() + later
        got = carry[first:first + n].double()
        assert ((got - want).abs() <= 1e-5 * want.abs().max()).all(), f"sequence {s}: carry off"
        held[first:first + n] = True
    assert torch.isnan(carry[~held]).all(), "a slot holding no chunk was written"
