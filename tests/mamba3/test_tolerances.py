"""compare_results: passes the reference against itself and catches planted errors in each kind of result."""
import math

import pytest
import torch

from ssmkit.mamba3.shapes import RESULT_NAMES
from ssmkit.mamba3.tolerances import FLOORS, MEASURED_DRIFT, TOLERANCES, compare_results


def _replace(results, name, value):
    results = list(results)
    results[RESULT_NAMES.index(name)] = value
    return results


def _row(rows, name):
    return next(row for row in rows if row[0] == name)


def test_every_bound_covers_the_measured_drift_and_final_v_is_exact():
    for name in RESULT_NAMES:
        assert TOLERANCES[name] >= max(MEASURED_DRIFT[name], FLOORS[name])
    assert TOLERANCES["final_v"] == 0.0


def test_reference_passes_against_itself_and_oracle_within_bounds(ragged_panel):
    _, reference, oracle = ragged_panel
    assert all(ok for _, _, _, ok in compare_results(reference, reference))
    rows = compare_results(reference, [x.to(r.dtype) for x, r in zip(oracle, reference)])
    assert all(ok for _, _, _, ok in rows), [row for row in rows if not row[3]]


@pytest.mark.parametrize("name", ["out", "final_ssm", "dadt", "dq", "dangles"])
def test_a_three_percent_error_fails(ragged_panel, name):
    _, reference, _ = ragged_panel
    value = reference[RESULT_NAMES.index(name)]
    rows = compare_results(_replace(reference, name, (value.float() * 1.03).to(value.dtype)), reference)
    assert not _row(rows, name)[3]
    assert sum(not ok for _, _, _, ok in rows) == 1


def test_final_angle_is_compared_circularly(ragged_panel):
    _, reference, _ = ragged_panel
    angle = reference[RESULT_NAMES.index("final_angle")]
    shifted = angle + 2 * math.pi * torch.randint(-1, 2, angle.shape, generator=torch.Generator().manual_seed(0))
    name, error, _, ok = _row(compare_results(_replace(reference, "final_angle", shifted), reference), "final_angle")
    assert ok and error < 1e-6


def test_final_v_must_be_exact(ragged_panel):
    _, reference, _ = ragged_panel
    final_v = reference[RESULT_NAMES.index("final_v")].clone()
    final_v.view(torch.int16)[0, 0, 0] += 1  # one unit in the last place
    assert not _row(compare_results(_replace(reference, "final_v", final_v), reference), "final_v")[3]


def test_nan_and_wrong_shape_fail(ragged_panel):
    _, reference, _ = ragged_panel
    dz = reference[RESULT_NAMES.index("dz")].clone()
    dz[3, 4, 5] = math.nan
    assert not _row(compare_results(_replace(reference, "dz", dz), reference), "dz")[3]
    _, error, _, ok = _row(compare_results(_replace(reference, "dd", reference[-2][:-1]), reference), "dd")
    assert error == math.inf and not ok


def test_wrong_number_of_results_raises(ragged_panel):
    _, reference, _ = ragged_panel
    with pytest.raises(ValueError, match="expected 16 results"):
        compare_results(reference[:5], reference)
