"""``ssmkit granite verify`` on a tiny config: the reference passes, planted errors fail with the right check."""
import json
from pathlib import Path

from ssmkit.cli import main

CANDIDATES = Path(__file__).parent / "candidates"
WORKLOADS = CANDIDATES / "tiny_workloads.json"
CORRECTNESS = ("prefill_padded_b3", "continue_b2", "decode_b2_p10_s3")


def verify(tiny_slice, tmp_path, candidate=None):
    out = tmp_path / "verify.json"
    argv = ["granite", "verify", "--slice", tiny_slice, "--workloads", str(WORKLOADS), "--device", "cpu",
            "--json", str(out)]
    rc = main(argv + (["--candidate", str(CANDIDATES / candidate)] if candidate else []))
    return rc, json.loads(out.read_text())


def failed(report):
    return {(c["workload"], c["quantity"]) for c in report["checks"] if not c["ok"]}


def test_verify_passes_the_reference_on_every_quantity(tiny_slice, tmp_path):
    rc, report = verify(tiny_slice, tmp_path)
    assert rc == 0 and report["passed"] and not failed(report)
    quantities = {(c["workload"], c["quantity"]) for c in report["checks"]}
    for w in CORRECTNESS:
        for q in ("output.rel_l2", "output.max_rel", "conv_state.rel_l2", "ssm_state.max_rel", "logits.rel_l2",
                  "kl", "cache.in_place", "inputs.unchanged"):
            assert (w, q) in quantities
    assert ("continue_b2", "continue1.output.rel_l2") in quantities
    assert ("decode_b2_p10_s3", "prefix_output.rel_l2") in quantities
    # the bounds are calibrated: MULTIPLE x a measured, non-zero reference error dominates each floor
    tol = report["tolerance"]
    for c in report["checks"]:
        if c["bound"] is not None:
            assert c["bound"] > 10 * (tol["kl_floor"] if c["quantity"] == "kl" else tol["floor"])
    assert report["git_commit"] and report["torch"] and report["command"].startswith("ssmkit granite verify")


def test_verify_fails_an_output_scaled_by_one_percent_on_outputs_only(tiny_slice, tmp_path):
    rc, report = verify(tiny_slice, tmp_path, "granite_scaled_output.py")
    bad = failed(report)
    assert rc == 1 and not report["passed"]
    assert {(w, "output.rel_l2") for w in CORRECTNESS} <= bad
    # the readout's final RMSNorm cancels a uniform scale, so logits and KL stay within bounds
    assert not {q for _, q in bad if not q.rsplit(".", 1)[0].endswith("output")}


def test_verify_fails_a_perturbed_ssm_state(tiny_slice, tmp_path):
    rc, report = verify(tiny_slice, tmp_path, "granite_perturbed_state.py")
    bad = failed(report)
    assert rc == 1
    assert {(w, "ssm_state.rel_l2") for w in CORRECTNESS} <= bad
    assert not {q for w, q in bad if w == "prefill_padded_b3" and not q.startswith("ssm_state")}


def test_verify_fails_a_candidate_that_returns_a_new_cache(tiny_slice, tmp_path):
    rc, report = verify(tiny_slice, tmp_path, "granite_new_cache.py")
    assert rc == 1
    assert failed(report) == {("continue_b2", "cache.in_place"), ("decode_b2_p10_s3", "cache.in_place")}


def test_verify_reports_a_candidate_that_raises(tiny_slice, tmp_path):
    rc, report = verify(tiny_slice, tmp_path, "granite_raises.py")
    assert rc == 1
    assert failed(report) == {(w, "run") for w in CORRECTNESS}
    assert all("planted failure" in c["note"] for c in report["checks"])


def test_verify_rejects_a_missing_candidate_file_with_usage_error(tiny_slice, tmp_path, capsys):
    rc = main(["granite", "verify", "--slice", tiny_slice, "--workloads", str(WORKLOADS), "--device", "cpu",
               "--candidate", str(tmp_path / "nope.py")])
    assert rc == 2 and "candidate file not found" in capsys.readouterr().err
