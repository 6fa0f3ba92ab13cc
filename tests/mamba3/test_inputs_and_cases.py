"""make_inputs draws (spec §8) and the visible cases file."""
import json
import math
from importlib import resources

import pytest
import torch

from ssmkit.mamba3.inputs import make_inputs
from ssmkit.mamba3.shapes import CHUNK, COTANGENT_NAMES, INPUT_NAMES
from ssmkit.mamba3.validate import validate_inputs


def test_inputs_are_valid_and_in_call_order():
    args = make_inputs([7, 1, 12], seed=41)
    assert tuple(args) == INPUT_NAMES + COTANGENT_NAMES
    validate_inputs(*(args[name] for name in INPUT_NAMES), tuple(args[name] for name in COTANGENT_NAMES))
    assert args["cu_seqlens"].tolist() == [0, 7, 8, 20]


def test_same_seed_gives_same_inputs_and_another_seed_differs():
    first, again, other = make_inputs([9, 4], 5), make_inputs([9, 4], 5), make_inputs([9, 4], 6)
    for name in first:
        assert torch.equal(first[name], again[name]), name
        if name != "cu_seqlens":
            assert not torch.equal(first[name], other[name]), name


def test_draws_follow_the_spec_distributions():
    args = make_inputs([600, 400], seed=42)
    dt, adt = args["dt"], args["adt"]
    assert 1e-3 <= dt.min() and dt.max() <= 0.1
    assert abs(dt.log().mean().item() - (math.log(1e-3) + math.log(0.1)) / 2) < 0.05  # log-uniform
    ratio = adt / dt
    assert -16 <= ratio.min() and ratio.max() <= -1
    trap = args["trap"].float()
    assert 0 <= trap.min() and trap.max() <= 1
    for name in ("q", "k"):
        rms = args[name].float().pow(2).mean(-1).sqrt()
        torch.testing.assert_close(rms, torch.ones_like(rms), rtol=0, atol=1e-2)  # bf16 rounding of unit rms
    for name in ("v", "z", "angles", "dout"):
        assert abs(args[name].float().std().item() - 1) < 0.02, name
    assert (args["d"] - 1).abs().max() < 0.5 and args["d"].std() > 0.05


@pytest.mark.parametrize("seqlens", [[], [3, 0], [2.0], [-1], [True]])
def test_bad_seqlens_raise(seqlens):
    with pytest.raises(ValueError, match="positive ints"):
        make_inputs(seqlens, seed=0)


def test_cases_file_has_the_issue_panels():
    cases = json.loads(resources.files("ssmkit.mamba3").joinpath("cases.json").read_text())
    assert len(cases) >= 6
    assert len({case["name"] for case in cases}) == len(cases)
    panel_sized = 0
    for case in cases:
        assert set(case) == {"name", "seqlens", "seed"} and isinstance(case["seed"], int), case
        assert 3 <= len(case["seqlens"]) <= 5, case
        for length in case["seqlens"]:
            assert isinstance(length, int) and length % CHUNK != 0 and 3 <= math.ceil(length / CHUNK) <= 15, case
        panel_sized += 2100 <= sum(case["seqlens"]) <= 2450
    assert panel_sized > len(cases) / 2
