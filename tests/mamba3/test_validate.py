"""Validation errors of validate_inputs / validate_cu_seqlens and of the public entries."""
import pytest
import torch

from ssmkit.mamba3 import mamba3_siso, mamba3_siso_varlen_joint_states_full_vjp
from ssmkit.mamba3.inputs import make_inputs
from ssmkit.mamba3.shapes import COTANGENT_NAMES, INPUT_NAMES
from ssmkit.mamba3.validate import validate_cu_seqlens, validate_inputs


@pytest.fixture
def args():
    return make_inputs([5, 3], seed=31)


def _validate(args, with_cotangents=True, **kwargs):
    cotangents = tuple(args[name] for name in COTANGENT_NAMES) if with_cotangents else None
    validate_inputs(*(args[name] for name in INPUT_NAMES), cotangents, **kwargs)


def test_valid_arguments_pass(args):
    _validate(args)
    _validate(args, with_cotangents=False)


@pytest.mark.parametrize(
    "name, bad, message",
    [
        ("q", lambda x: x[:, :, :64], r"q must have shape \(T, 1, 128\).*GQA 1 -> 32 heads, Q/K width 128"),
        ("k", lambda x: x.expand(-1, 32, -1), r"k must have shape \(T, 1, 128\)"),
        ("v", lambda x: x[:, :, :32], r"v must have shape \(T, 32, 64\).*V/Z width 64"),
        ("z", lambda x: x[:-1], r"z must have shape \(T, 32, 64\) = \(8, 32, 64\)"),
        ("adt", lambda x: x.t(), r"adt must have shape \(T, 32\)"),
        ("angles", lambda x: x[..., :16], r"angles must have shape \(T, 32, 32\).*32 rotary angles"),
        ("q_bias", lambda x: x[0], r"q_bias must have shape \(32, 128\)"),
        ("d", lambda x: x[None], r"d must have shape \(32\)"),
        ("dfinal_ssm", lambda x: x[:1], r"dfinal_ssm must have shape \(S, 32, 64, 128\) = \(2, 32, 64, 128\)"),
        ("dout", lambda x: x[:, :16], r"dout must have shape \(T, 32, 64\)"),
    ],
)
def test_wrong_shapes_raise_value_error_naming_the_frozen_shape(args, name, bad, message):
    args[name] = bad(args[name])
    with pytest.raises(ValueError, match=message):
        _validate(args)


@pytest.mark.parametrize(
    "name, dtype",
    [("q", torch.float32), ("v", torch.float16), ("adt", torch.bfloat16), ("dt", torch.float64),
     ("trap", torch.float32), ("angles", torch.float32), ("k_bias", torch.bfloat16), ("d", torch.float64),
     ("dout", torch.float32), ("dfinal_angle", torch.bfloat16), ("dfinal_v", torch.float32)],
)
def test_wrong_dtypes_raise_type_error(args, name, dtype):
    args[name] = args[name].to(dtype)
    with pytest.raises(TypeError, match=f"{name} must have dtype"):
        _validate(args)


def test_non_tensor_raises_type_error(args):
    args["v"] = args["v"].tolist()
    with pytest.raises(TypeError, match="v must be a torch.Tensor, got list"):
        _validate(args)


@pytest.mark.parametrize("name", ["k", "dt", "d", "dfinal_k", "cu_seqlens"])
def test_tensor_on_another_device_raises(args, name):
    args[name] = torch.empty_like(args[name], device="meta")
    with pytest.raises(ValueError, match=f"one device: q is on cpu, {name} is on meta"):
        _validate(args)


def test_wrong_number_of_cotangents_raises(args):
    with pytest.raises(TypeError, match="cotangents must be a tuple of 5 tensors"):
        validate_inputs(*(args[name] for name in INPUT_NAMES), (args["dout"],))


@pytest.mark.parametrize(
    "cu_seqlens, error, message",
    [
        ([1, 5, 8], ValueError, "must start at 0"),
        ([0, 5, 7], ValueError, r"must end at T = 8"),
        ([0, 5, 5, 8], ValueError, "strictly increasing"),
        ([0, 6, 5, 8], ValueError, "strictly increasing"),
        ([0], ValueError, r"S >= 1 sequences"),
        ([[0, 5, 8]], ValueError, "must be 1-D"),
    ],
)
def test_bad_cu_seqlens_values_raise(args, cu_seqlens, error, message):
    args["cu_seqlens"] = torch.tensor(cu_seqlens, dtype=torch.int32)
    with pytest.raises(error, match=message):
        _validate(args, with_cotangents=False)


def test_cu_seqlens_must_be_int32(args):
    args["cu_seqlens"] = args["cu_seqlens"].long()
    with pytest.raises(TypeError, match="cu_seqlens must have dtype torch.int32, got torch.int64"):
        _validate(args)


def test_value_checks_can_be_skipped_and_run_alone(args):
    args["cu_seqlens"] = torch.tensor([0, 2, 9], dtype=torch.int32)  # right shape, wrong end
    _validate(args, check_cu_seqlens_values=False)
    with pytest.raises(ValueError, match="must end at T = 8"):
        validate_cu_seqlens(args["cu_seqlens"], 8)


def test_public_entries_validate(args):
    args["trap"] = args["trap"].float()
    with pytest.raises(TypeError, match="trap must have dtype torch.bfloat16"):
        mamba3_siso_varlen_joint_states_full_vjp(**args)
    with pytest.raises(TypeError, match="trap must have dtype torch.bfloat16"):
        mamba3_siso(*(args[name] for name in INPUT_NAMES))


def test_entry_skips_a_layout_it_validated_and_still_rejects_other_ones(args, monkeypatch):
    """Without the cu_seqlens value check (the CUDA default) a validated argument layout is remembered: the same
    layout is not checked again; a changed dtype, shape or device is, and raises."""
    from ssmkit.mamba3 import op

    calls = []
    real = op.validate_inputs
    monkeypatch.setattr(op, "validate_inputs", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    monkeypatch.setattr(op, "_VALID_LAYOUTS", set())
    inputs = tuple(args[n] for n in INPUT_NAMES)
    cotangents = tuple(args[n] for n in COTANGENT_NAMES)
    op._validate(inputs, cotangents, False)
    op._validate(inputs, cotangents, False)
    assert len(calls) == 1
    op._validate(inputs, None, False)  # the autograd form's layout (no cotangents) is its own
    assert len(calls) == 2
    with pytest.raises(TypeError, match="dtype"):
        op._validate((inputs[0].float(), *inputs[1:]), cotangents, False)
    with pytest.raises(ValueError, match="shape"):
        op._validate((*inputs[:2], inputs[2][:-1], *inputs[3:]), cotangents, False)
    op._validate(inputs, cotangents, True)  # the value check always runs
    assert len(calls) == 5
