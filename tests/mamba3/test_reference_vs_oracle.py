"""The fp32 eager reference against the float64 token-recurrence oracle (spec §3 vs §5), all 16 results."""
import pytest
import torch

from ssmkit.mamba3.inputs import make_inputs
from ssmkit.mamba3.oracle import mamba3_siso_varlen_joint_states_full_vjp_oracle
from ssmkit.mamba3.reference import mamba3_siso_varlen_joint_states_full_vjp_reference
from ssmkit.mamba3.shapes import RESULT_NAMES
from ssmkit.mamba3.tolerances import CALIBRATION_CASES, MEASURED_DRIFT, U_BF16, result_error

# fp32 results: a few hundred fp32 roundings along a <= 130-token sequence (cumsum of the log decay, sums over
# 128-wide dots and the sequence) stay well under 1e-5 relative; bf16 results add one output rounding, which is
# at most U_BF16 relative per element and so at most U_BF16 in norm.
FP32_BOUND = 1e-5
BOUNDS = {torch.float32: FP32_BOUND, torch.bfloat16: U_BF16 + FP32_BOUND}


def _assert_close_to_oracle(reference, oracle):
    for name, ref, orc in zip(RESULT_NAMES, reference, oracle):
        assert ref.shape == orc.shape, name
        assert torch.isfinite(ref).all(), name
        error = result_error(name, ref, orc)
        assert error <= BOUNDS[ref.dtype], f"{name}: norm-relative error {error:.3e} > {BOUNDS[ref.dtype]:.3e}"


def test_reference_matches_float64_oracle_on_ragged_panel(ragged_panel):
    _, reference, oracle = ragged_panel
    _assert_close_to_oracle(reference, oracle)


@pytest.mark.parametrize("seqlens", [[1, 2, 1], [2, 1, 3, 2]])
def test_reference_matches_oracle_on_length_one_and_two_sequences(seqlens):
    args = make_inputs(seqlens, seed=3)
    _assert_close_to_oracle(
        mamba3_siso_varlen_joint_states_full_vjp_reference(**args),
        mamba3_siso_varlen_joint_states_full_vjp_oracle(**args),
    )


def test_each_sequence_of_the_panel_matches_oracle(ragged_panel):
    """Per-sequence slices of the per-token results, so a short sequence's error cannot hide in the panel norm."""
    args, reference, oracle = ragged_panel
    bounds = args["cu_seqlens"].tolist()
    per_token = [name for name in RESULT_NAMES if name not in ("final_angle", "final_ssm", "final_k", "final_v")]
    per_token = [name for name in per_token if name not in ("dq_bias", "dk_bias", "dd")]
    for name in per_token:
        i = RESULT_NAMES.index(name)
        for start, end in zip(bounds[:-1], bounds[1:]):
            error = result_error(name, reference[i][start:end], oracle[i][start:end])
            bound = BOUNDS[reference[i].dtype]
            assert error <= bound, f"{name} tokens [{start}, {end}): {error:.3e} > {bound:.3e}"


def test_reference_drift_stays_at_the_calibrated_values(ragged_panel_case, ragged_panel):
    """The tolerance table's MEASURED_DRIFT came from this case; a less accurate reference would invalidate it."""
    assert CALIBRATION_CASES[0] == ragged_panel_case
    _, reference, oracle = ragged_panel
    for name, ref, orc in zip(RESULT_NAMES, reference, oracle):
        error = result_error(name, ref, orc)
        assert error <= MEASURED_DRIFT[name] * 1.05, f"{name}: drift {error:.3e} > recorded {MEASURED_DRIFT[name]:.3e}"


def test_final_v_is_the_value_at_each_sequence_end(ragged_panel):
    args, reference, _ = ragged_panel
    last = args["cu_seqlens"][1:].long() - 1
    assert torch.equal(reference[RESULT_NAMES.index("final_v")], args["v"][last])
