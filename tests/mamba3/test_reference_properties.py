"""Contract properties of the reference and of the public entries: sequence isolation, no mutation, determinism,
fresh results, spec dtypes/shapes, and agreement of the autograd form with the full-VJP form."""
import pytest
import torch

from ssmkit.mamba3 import mamba3_siso, mamba3_siso_varlen_joint_states_full_vjp
from ssmkit.mamba3.inputs import make_inputs
from ssmkit.mamba3.reference import mamba3_siso_varlen_joint_states_full_vjp_reference
from ssmkit.mamba3.shapes import COTANGENT_NAMES, INPUT_NAMES, RESULT_NAMES

SEQLENS = [40, 33, 50]
PER_TOKEN = ("out", "dq", "dk", "dv", "dadt", "ddt", "dtrap", "dangles", "dz")
PER_SEQUENCE = ("final_angle", "final_ssm", "final_k", "final_v")
GLOBAL = ("dq_bias", "dk_bias", "dd")
ENTRIES = {
    "reference": mamba3_siso_varlen_joint_states_full_vjp_reference,
    "op": mamba3_siso_varlen_joint_states_full_vjp,
}
SPEC_RESULTS = {  # name -> (shape with T = 123 tokens and S = 3 sequences, dtype), spec "Decisions" tables
    "out": ((123, 32, 64), torch.bfloat16), "final_angle": ((3, 32, 32), torch.float32),
    "final_ssm": ((3, 32, 64, 128), torch.float32), "final_k": ((3, 32, 128), torch.float32),
    "final_v": ((3, 32, 64), torch.bfloat16), "dq": ((123, 1, 128), torch.bfloat16),
    "dk": ((123, 1, 128), torch.bfloat16), "dv": ((123, 32, 64), torch.bfloat16), "dadt": ((123, 32), torch.float32),
    "ddt": ((123, 32), torch.float32), "dtrap": ((123, 32), torch.bfloat16), "dq_bias": ((32, 128), torch.float32),
    "dk_bias": ((32, 128), torch.float32), "dangles": ((123, 32, 32), torch.bfloat16), "dd": ((32,), torch.float32),
    "dz": ((123, 32, 64), torch.bfloat16),
}


def _results(entry, args):
    return dict(zip(RESULT_NAMES, ENTRIES[entry](**args)))


def _perturb_sequence(args, start, end, seed):
    """New args whose per-token inputs and cotangents differ from ``args`` on tokens [start, end) only."""
    gen = torch.Generator().manual_seed(seed)
    changed = dict(args)
    for name in ("q", "k", "v", "adt", "dt", "trap", "angles", "z", "dout"):
        x = args[name].clone()
        noise = torch.rand(x[start:end].shape, generator=gen) + 0.5  # positive factor keeps dt > 0 and adt <= 0
        x[start:end] = (x[start:end].float() * noise).to(x.dtype)
        changed[name] = x
    return changed


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_changing_one_sequence_leaves_the_others_bit_identical(entry):
    args = make_inputs(SEQLENS, seed=21)
    base = _results(entry, args)
    changed = _results(entry, _perturb_sequence(args, 40, 73, seed=1))
    assert not torch.equal(base["out"][40:73], changed["out"][40:73])  # the perturbation did reach sequence 1
    for name in PER_TOKEN:
        for rows in (slice(0, 40), slice(73, 123)):
            assert torch.equal(base[name][rows], changed[name][rows]), (name, rows)
    for name in PER_SEQUENCE:
        for s in (0, 2):
            assert torch.equal(base[name][s], changed[name][s]), (name, s)


def test_packed_sequence_equals_the_same_sequence_alone():
    """No state, angle or shifted term leaks across a boundary: the last sequence alone gives the same results."""
    args = make_inputs(SEQLENS, seed=22)
    packed = _results("reference", args)
    alone_args = {name: x[73:] for name, x in args.items() if name in ("q", "k", "v", "adt", "dt", "trap", "angles",
                                                                        "z", "dout")}
    alone_args |= {name: args[name][2:] for name in ("dfinal_angle", "dfinal_ssm", "dfinal_k", "dfinal_v")}
    alone_args |= {name: args[name] for name in ("q_bias", "k_bias", "d")}
    alone_args["cu_seqlens"] = torch.tensor([0, 50], dtype=torch.int32)
    alone = _results("reference", alone_args)
    for name in PER_TOKEN:
        torch.testing.assert_close(packed[name][73:], alone[name], rtol=0, atol=0, msg=name)
    for name in PER_SEQUENCE:
        torch.testing.assert_close(packed[name][2], alone[name][0], rtol=0, atol=0, msg=name)


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_inputs_are_not_mutated_and_results_are_fresh(entry):
    args = make_inputs(SEQLENS, seed=23)
    before = {name: x.clone() for name, x in args.items()}
    results = ENTRIES[entry](**args)
    for name in INPUT_NAMES + COTANGENT_NAMES:
        assert torch.equal(args[name], before[name]), name
    input_storages = {x.untyped_storage().data_ptr() for x in args.values()}
    for name, x in zip(RESULT_NAMES, results):
        assert x.untyped_storage().data_ptr() not in input_storages, name
        assert not x.requires_grad, name


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_two_calls_give_bit_identical_results(entry):
    args = make_inputs(SEQLENS, seed=24)
    for name, first, second in zip(RESULT_NAMES, ENTRIES[entry](**args), ENTRIES[entry](**args)):
        assert torch.equal(first, second), name


def test_results_have_spec_shapes_and_dtypes():
    results = _results("op", make_inputs(SEQLENS, seed=25))
    for name, (shape, dtype) in SPEC_RESULTS.items():
        assert (tuple(results[name].shape), results[name].dtype) == (shape, dtype), name
        assert torch.isfinite(results[name]).all(), name


def test_autograd_form_matches_full_vjp_form():
    args = make_inputs(SEQLENS, seed=26)
    full = mamba3_siso_varlen_joint_states_full_vjp(**args)
    leaves = {name: args[name].clone().requires_grad_(True) for name in INPUT_NAMES if name != "cu_seqlens"}
    outputs = mamba3_siso(**leaves, cu_seqlens=args["cu_seqlens"])
    grads = torch.autograd.grad(outputs, list(leaves.values()), [args[name] for name in COTANGENT_NAMES])
    for name, expected, got in zip(RESULT_NAMES, full, tuple(outputs) + grads):
        assert got.dtype == expected.dtype, name
        assert torch.equal(got.detach(), expected), name
