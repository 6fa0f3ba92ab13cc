"""Workload/case files and the comparison metrics the verify, bench and judge share."""
import json
import math

import pytest
import torch

from ssmkit.harness.compare import contract_check, digest_all, kl_divergence_max, max_rel_error, rel_l2_error
from ssmkit.harness.workloads import (cpu_cases, default_cases_path, default_workloads_path, left_padding_mask,
                                      load_cases, load_workloads, parse_workload, prefill_inputs)

GOOD = {"name": "p", "kind": "prefill", "batch": 2, "lengths": [5, 3], "seed": 1, "purpose": "correctness"}


def write(tmp_path, entries):
    path = tmp_path / "w.json"
    path.write_text(json.dumps(entries))
    return path


def test_package_workload_and_case_files_load():
    for device in ("cpu", "cuda"):
        workloads = load_workloads(default_workloads_path(device))
        assert {w.purpose for w in workloads} == {"correctness", "bench"}
    cases = load_cases(default_cases_path())
    small = cpu_cases(cases)
    assert len(small) == 2 and all(sum(c.seqlens) < sum(full.seqlens) for c, full in zip(small, cases))


@pytest.mark.parametrize("change, message", [
    ({"kind": "train"}, "'kind' must be one of"),
    ({"purpose": "fun"}, "'purpose' must be one of"),
    ({"lengths": [5]}, "'lengths' has 1 entries but batch is 2"),
    ({"lengths": [5, 0]}, "'lengths' must be a non-empty list"),
    ({"seed": -1}, "'seed' must be an integer >= 0"),
    ({"continue": 0}, "'continue' must be an integer >= 1"),
])
def test_invalid_workload_entries_are_rejected_with_the_field_named(tmp_path, change, message):
    with pytest.raises(ValueError, match=message):
        load_workloads(write(tmp_path, [GOOD | change]))


def test_duplicate_workload_names_are_rejected(tmp_path):
    with pytest.raises(ValueError, match="unique"):
        load_workloads(write(tmp_path, [GOOD, GOOD]))


def test_left_padding_mask_puts_real_tokens_at_the_right_end():
    assert left_padding_mask((3, 1, 3), "cpu").tolist() == [[1, 1, 1], [0, 0, 1], [1, 1, 1]]
    assert left_padding_mask((4, 4), "cpu") is None


def test_inputs_are_deterministic_per_seed_and_rotation():
    w = parse_workload(GOOD | {"continue": [2]})
    a, b, c = (prefill_inputs(w, 8, "cpu", rotation=r) for r in (0, 0, 1))
    assert torch.equal(a.hidden, b.hidden) and torch.equal(a.continuations[0], b.continuations[0])
    assert not torch.equal(a.hidden, c.hidden)
    assert a.hidden.dtype == torch.bfloat16 and a.hidden.shape == (2, 5, 8) and a.hidden[1, :2].abs().sum() > 0


def test_metrics_match_their_definitions():
    truth = torch.tensor([[3.0, -4.0], [0.0, 0.0]])
    x = truth + torch.tensor([[0.0, 0.5], [0.0, 0.0]])
    assert rel_l2_error(x, truth) == pytest.approx(0.1)
    assert max_rel_error(x, truth) == pytest.approx(0.125)
    assert rel_l2_error(x * math.nan, truth) == math.inf
    logits = torch.tensor([[0.0, math.log(3.0)]])
    # KL(p || q) with p = (1/4, 3/4), q = (1/2, 1/2)
    expected = 0.25 * math.log(0.5) + 0.75 * math.log(1.5)
    assert kl_divergence_max(logits, torch.zeros(1, 2)) == pytest.approx(expected)


def test_contract_check_names_each_mismatch_and_digests_see_one_bit():
    ref = torch.zeros(2, 3, dtype=torch.bfloat16)
    bad = contract_check("w", "q", torch.full((2, 4), math.nan), ref)
    assert not bad.ok and "shape" in bad.note and "dtype" in bad.note and "NaN" in bad.note
    assert contract_check("w", "q", ref.clone(), ref).ok
    flipped = ref.clone()
    flipped.view(torch.int16)[0, 0] = 1
    assert digest_all([ref]) != digest_all([flipped]) and digest_all([ref]) == digest_all([ref.clone()])
