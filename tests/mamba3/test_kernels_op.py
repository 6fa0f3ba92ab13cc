"""The public operator over the Triton kernels (ssmkit.mamba3.op): all 16 results against the float64 oracle,
determinism, no mutation, the autograd form against the full-VJP entry, and the dispatch rules.

Kernels run in Triton's CPU interpreter here (tests/conftest.py sets TRITON_INTERPRET=1 without CUDA). Bounds as in
test_kernels_bwd.py: fp32 results by norm, bf16 results element-wise within one bf16 rounding step; the calls
checked against the oracle keep the per-head dq / dk rows in fp32 (FP32_ROWS, as test_kernels_bwd.py explains).
"""
import math
import os

import pytest
import torch
from test_kernels_bwd import FP32_ROWS, assert_close_to_oracle, poisoned_allocations

from ssmkit.kernels.mamba3.bwd import Mamba3BwdConfig
from ssmkit.kernels.mamba3.fwd import Mamba3FwdConfig
from ssmkit.mamba3 import mamba3_siso, mamba3_siso_varlen_joint_states_full_vjp
from ssmkit.mamba3.inputs import make_inputs
from ssmkit.mamba3.op import kernels_apply
from ssmkit.mamba3.oracle import mamba3_siso_varlen_joint_states_full_vjp_oracle
from ssmkit.mamba3.reference import mamba3_siso_varlen_joint_states_full_vjp_reference
from ssmkit.mamba3.shapes import COTANGENT_NAMES, INPUT_NAMES, RESULT_NAMES

# These tests run the kernels in Triton's CPU interpreter on CPU tensors (exact fp32 dots there; the tolerances
# assume it). On a CUDA machine the kernels are checked by `ssmkit mamba3 selfcheck`, bench/mamba3_bench.py and the
# judge instead.
pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1",
                                reason="interpreter tests on CPU tensors (TRITON_INTERPRET=1)")

PANEL = [66, 1, 2]  # two chunks (one token in the second), and the two shortest sequences


@pytest.fixture(scope="module")
def args():
    return make_inputs(PANEL, seed=31)


@pytest.fixture(scope="module")
def first_run(args):
    """(clones of the arguments taken before the call, the op's 16 results with NaN-poisoned allocations)."""
    before = {name: x.clone() for name, x in args.items()}
    with poisoned_allocations():
        return before, mamba3_siso_varlen_joint_states_full_vjp(**args, bwd_config=FP32_ROWS)


def test_graph_path_gives_the_direct_calls_bits(args, first_run):
    """graph=True (the CUDA default; here the interpreter's stand-in: the captured body run eagerly) returns the
    direct call's 16 results bit for bit, with NaN-poisoned allocations."""
    with poisoned_allocations():
        results = mamba3_siso_varlen_joint_states_full_vjp(**args, graph=True, bwd_config=FP32_ROWS)
    for name, got, want in zip(RESULT_NAMES, results, first_run[1]):
        assert torch.equal(got, want), name


def _circular(x):
    """Angle difference folded into [-pi, pi)."""
    return torch.remainder(x + math.pi, 2 * math.pi) - math.pi


def assert_results_match_oracle(args, results):
    """All 16 results written and within the oracle bounds (final_angle circular, final_v exact)."""
    oracle = mamba3_siso_varlen_joint_states_full_vjp_oracle(**args)
    for name, got, ref in zip(RESULT_NAMES, results, oracle):
        assert got.shape == ref.shape, name
        assert not torch.isnan(got).any(), f"{name}: elements left unwritten"
        err = got.double() - ref
        if name == "final_angle":
            err = _circular(err)
        if name == "final_v":
            assert torch.equal(got, args["v"][args["cu_seqlens"][1:].long() - 1]), name
        else:
            assert_close_to_oracle(name, got, err, ref)


def test_op_results_match_float64_oracle_and_are_all_written(args, first_run):
    assert_results_match_oracle(args, first_run[1])


def test_op_is_bit_identical_on_repeat_and_leaves_inputs_untouched(args, first_run):
    before, first = first_run
    second = mamba3_siso_varlen_joint_states_full_vjp(**args, bwd_config=FP32_ROWS)
    for name, a, b in zip(RESULT_NAMES, first, second):
        assert torch.equal(a, b), f"{name} differs between two identical calls"
    for name, x in args.items():
        assert torch.equal(x, before[name]), f"input {name} was modified"
    inputs = {x.data_ptr() for x in args.values()}
    assert not inputs & {r.data_ptr() for r in first}, "a result aliases an input"


def test_autograd_form_matches_full_vjp_entry_with_unused_outputs(args):
    """Loss over out and final_ssm only: the other outputs' cotangents are zero; gradients equal the full-VJP
    entry's with those zero cotangents, bit for bit (same kernels)."""
    leaves = {name: args[name].clone().requires_grad_(True) for name in INPUT_NAMES if name != "cu_seqlens"}
    out, _, final_ssm, _, _ = mamba3_siso(**leaves, cu_seqlens=args["cu_seqlens"])
    loss = (out.float() * args["dout"].float()).sum() + (final_ssm * args["dfinal_ssm"]).sum()
    loss.backward()
    cotangents = {name: args[name] if name in ("dout", "dfinal_ssm") else torch.zeros_like(args[name])
                  for name in COTANGENT_NAMES}
    inputs = {name: args[name] for name in INPUT_NAMES}
    full = dict(zip(RESULT_NAMES, mamba3_siso_varlen_joint_states_full_vjp(**inputs, **cotangents)))
    for name, leaf in leaves.items():
        assert leaf.grad.dtype == full["d" + name].dtype, name
        assert torch.equal(leaf.grad, full["d" + name]), name


def test_autograd_form_without_gradients_saves_nothing_and_matches(args, monkeypatch):
    """With no input requiring grad, and under torch.no_grad with inputs that do, the autograd form runs the forward
    kernels without saving for the backward and returns the same outputs, bit for bit, without a graph."""
    import ssmkit.mamba3.op as op

    leaves = {name: args[name].clone().requires_grad_(True) for name in INPUT_NAMES if name != "cu_seqlens"}
    with_grad = op.mamba3_siso(**leaves, cu_seqlens=args["cu_seqlens"])
    calls = []
    real_fwd = op.mamba3_siso_fwd
    monkeypatch.setattr(op, "mamba3_siso_fwd", lambda *a, **kw: calls.append(kw) or real_fwd(*a, **kw))
    plain = op.mamba3_siso(**{name: args[name] for name in INPUT_NAMES})
    with torch.no_grad():
        no_grad = op.mamba3_siso(**leaves, cu_seqlens=args["cu_seqlens"])
    assert calls == [{"save_for_backward": False, "validate": False}] * 2
    for outputs in (plain, no_grad):
        assert len(outputs) == 5 and not any(x.requires_grad for x in outputs)
        for x, y in zip(outputs, with_grad):
            assert torch.equal(x, y.detach())


def test_dispatch_runs_reference_on_cpu_without_interpreter(args, monkeypatch):
    assert kernels_apply(torch.device("cuda"))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert kernels_apply(torch.device("cpu"))
    monkeypatch.delenv("TRITON_INTERPRET")
    assert not kernels_apply(torch.device("cpu"))
    got = mamba3_siso_varlen_joint_states_full_vjp(**args)
    want = mamba3_siso_varlen_joint_states_full_vjp_reference(**args)
    for name, a, b in zip(RESULT_NAMES, got, want):
        assert torch.equal(a, b), name


def test_op_checks_cu_seqlens_values_when_asked(args):
    bad = dict(args, cu_seqlens=torch.tensor([0, 66, 66, 69], dtype=torch.int32))
    with pytest.raises(ValueError, match="strictly increasing"):
        mamba3_siso_varlen_joint_states_full_vjp(**bad, check_cu_seqlens=True)
    with pytest.raises(TypeError, match="dtype"):
        mamba3_siso_varlen_joint_states_full_vjp(**dict(args, dt=args["dt"].double()))


def test_op_passes_launch_configs_to_the_kernels(args):
    """fwd_config / bwd_config reach the kernels: another forward config, the chunk-parallel state-gradient form and
    another finish-kernel split (4 tokens per GQA-reduce program, 2 warps) give all 16 results within the oracle
    bounds, every element written; invalid configs are refused."""
    with poisoned_allocations():
        got = mamba3_siso_varlen_joint_states_full_vjp(
            **args, fwd_config=Mamba3FwdConfig(chunk_warps=8),
            bwd_config=FP32_ROWS._replace(dstate_scan=True, scan_block=8192, reduce_tokens=4, finish_warps=2))
    assert_results_match_oracle(args, got)
    with pytest.raises(ValueError, match="scan_block"):
        mamba3_siso_varlen_joint_states_full_vjp(**args, bwd_config=Mamba3BwdConfig(scan_block=96))
    for bad in (dict(reduce_tokens=12), dict(head_partials="fp16"), dict(finish_pdl="yes"), dict(side_pdl=1),
                dict(intra_pdl=None)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            mamba3_siso_varlen_joint_states_full_vjp(**args, bwd_config=Mamba3BwdConfig(**bad))

