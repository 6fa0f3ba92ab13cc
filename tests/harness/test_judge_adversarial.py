"""The judge against adversarial candidates (tests/harness/adversarial/), on the CPU at tiny shapes.

Each candidate must be caught with the right reason; the correct one passes and scores about 1x against itself.
Workers run as root here when the unprivileged user cannot start this machine's interpreter (allow_same_user);
the tests whitelist the reference as a candidate (allow_reference, never on the command line) and pass the
manifest of the current tree (the committed manifest has its own test in test_judge_manifest.py).
"""
import json
from pathlib import Path

import pytest
import torch

from ssmkit.granite.config import GraniteMambaConfig
from ssmkit.harness.judge import JudgeOptions, run_granite_judge, run_mamba3_judge
from ssmkit.harness.manifest import compute_manifest

ADVERSARIAL = Path(__file__).parent / "adversarial"

# Correctness workloads stay at <= 16 tokens; the bench prefill is longer than granite_wrong_large.LARGE (32).
GRANITE_PANEL = [
    {"name": "pad_b2", "kind": "prefill", "batch": 2, "lengths": [12, 7], "seed": 1, "purpose": "correctness"},
    {"name": "cont_b1", "kind": "prefill", "batch": 1, "lengths": [10], "continue": 3, "seed": 2,
     "purpose": "correctness"},
    {"name": "decode_b2", "kind": "decode", "batch": 2, "prefix": 9, "steps": 2, "seed": 3,
     "purpose": "correctness"},
    {"name": "bench_prefill", "kind": "prefill", "batch": 2, "lengths": [64, 40], "seed": 4, "purpose": "bench"},
    {"name": "bench_decode", "kind": "decode", "batch": 2, "prefix": 8, "steps": 1, "seed": 5, "purpose": "bench"},
]
MAMBA3_PANEL = [{"name": "ragged", "seqlens": [37, 70, 5], "seed": 1}]


def options(**overrides) -> JudgeOptions:
    base = dict(pairs=5, rotations=2, warmup=1, allow_same_user=True, allow_reference=True,
                manifest=compute_manifest(), granite_config=GraniteMambaConfig.tiny(), start_timeout=300,
                build_timeout=300, call_timeout=300)
    return JudgeOptions(**{**base, **overrides})


@pytest.fixture(scope="module")
def panels(tmp_path_factory):
    folder = tmp_path_factory.mktemp("panels")
    (folder / "granite.json").write_text(json.dumps(GRANITE_PANEL))
    (folder / "mamba3.json").write_text(json.dumps(MAMBA3_PANEL))
    return folder


def judge(track, name, panels, tmp_path, **overrides):
    out = tmp_path / "report.json"
    run = run_granite_judge if track == "granite" else run_mamba3_judge
    code = run(ADVERSARIAL / name, panels / f"{track}.json", out, "cpu", options(**overrides))
    return code, json.loads(out.read_text())


def test_correct_granite_candidate_passes_and_scores_about_1x_against_itself(panels, tmp_path, capsys):
    code, report = judge("granite", "granite_correct.py", panels, tmp_path)
    assert code == 0, report.get("failure")
    assert report["passed"] and all(c["ok"] for c in report["checks"])
    assert {w["name"] for w in report["workloads"]} == {"bench_prefill", "bench_decode"}
    assert 0.5 < report["geomean"] < 2.0  # the same code on both sides; a loaded 2-core CPU is noisy
    assert all(w["spread"] >= 0 and len(w["pair_ratios"]) == 5 for w in report["workloads"])
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("VERDICT: PASS granite")


def test_slow_first_call_does_not_move_the_timing(panels, tmp_path):
    # The delay (1-2 s, far longer than a timed call here) falls in the correctness gauntlet, never in timing.
    code, report = judge("granite", "granite_slow_first_call.py", panels, tmp_path, pairs=3)
    assert code == 0, report.get("failure")
    assert 0.5 < report["geomean"] < 2.0
    assert all(w["candidate_ms"] < 200 for w in report["workloads"])


@pytest.mark.parametrize("name, check, reason", [
    ("granite_small_error.py", "pad_b2 output.rel_l2", "> bound"),
    ("granite_wrong_large.py", "bench-shape validation: bench_prefill", "> bound"),
    ("granite_caching.py", "decode_b2 output", "> bound"),  # decode step 2 has step 1's shape
    ("granite_wrong_when_timed.py", "bench_prefill timed-call digest", "differs from the validated output"),
    ("granite_mutates_input.py", "pad_b2 prefill input immutability", "wrote into its inputs ['hidden']"),
    ("granite_new_cache.py", "cont_b1 cache.in_place", "did not update and return the given cache"),
    ("granite_crashes.py", "pad_b2 prefill", "candidate worker died during 'call' (killed by signal 6)"),
])
def test_granite_adversary_fails_with_the_right_reason(panels, tmp_path, name, check, reason):
    code, report = judge("granite", name, panels, tmp_path)
    assert code == 1 and report["score"] == 0 and not report["passed"]
    assert report["failure"]["check"].startswith(check), report["failure"]
    assert reason in report["failure"]["reason"], report["failure"]


def test_hanging_granite_candidate_times_out_cleanly(panels, tmp_path):
    code, report = judge("granite", "granite_hangs.py", panels, tmp_path, call_timeout=5)
    assert code == 1 and report["score"] == 0
    assert report["failure"]["check"] == "pad_b2 prefill"
    assert "candidate worker timed out after 5 s in 'call'" in report["failure"]["reason"]


@pytest.mark.parametrize("name, reason", [
    ("granite_imports_judge.py", "references the judge's internals (ssmkit.harness"),
    ("granite_sleeps_first_call.py", "uses timers or clocks (time)"),
])
def test_scan_rejects_granite_adversary_before_it_runs(panels, tmp_path, name, reason):
    code, report = judge("granite", name, panels, tmp_path)
    assert code == 1 and report["failure"]["check"] == "source scan"
    assert reason in report["failure"]["reason"]
    assert "isolation" not in report  # no worker was started


def test_reference_delegation_is_rejected_without_the_test_only_allowance(panels, tmp_path):
    code, report = judge("granite", "granite_small_error.py", panels, tmp_path, allow_reference=False)
    assert code == 1 and report["failure"]["check"] == "source scan"
    assert "delegates to the baseline the judge times against (ssmkit.granite.reference" in report["failure"]["reason"]


def test_missing_candidate_scores_zero_with_the_reason(panels, tmp_path):
    code, report = judge("granite", "no_such_candidate.py", panels, tmp_path)
    assert code == 1 and report["score"] == 0
    assert report["failure"]["check"] == "candidate file" and "not found" in report["failure"]["reason"]


def test_unimportable_candidate_scores_zero_with_the_reason(panels, tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('cannot import me')\n")
    out = tmp_path / "report.json"
    code = run_granite_judge(broken, panels / "granite.json", out, "cpu", options())
    report = json.loads(out.read_text())
    assert code == 1 and report["failure"]["check"] == "import"
    assert "RuntimeError: cannot import me" in report["failure"]["reason"]


def test_candidate_that_fails_to_build_scores_zero_with_the_reason(panels, tmp_path):
    broken = tmp_path / "unbuildable.py"
    broken.write_text("class CandidateBlock:\n    def __init__(self, config, layer_idx=0):\n"
                      "        raise ValueError('no kernels for this config')\n")
    out = tmp_path / "report.json"
    code = run_granite_judge(broken, panels / "granite.json", out, "cpu", options())
    report = json.loads(out.read_text())
    assert code == 1 and report["score"] == 0 and report["failure"]["check"] == "build"
    assert "ValueError: no kernels for this config" in report["failure"]["reason"]


def test_changed_fixed_part_makes_the_judge_refuse(panels, tmp_path, capsys):
    manifest = compute_manifest()
    manifest["files"]["harness/compare.py"] = "0" * 64
    code, report = judge("granite", "granite_correct.py", panels, tmp_path, manifest=manifest)
    assert code == 2 and report["score"] == 0 and not report["passed"]
    assert "harness/compare.py: changed" in report["refused"]
    assert "VERDICT: REFUSED" in capsys.readouterr().out


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine where the worker cannot use CUDA")
def test_a_worker_that_cannot_use_the_device_makes_the_judge_refuse(panels, tmp_path, capsys, monkeypatch):
    # As 'nobody' without access to the GPU device files: a set-up failure (exit 2), never a score of 0. Here the
    # judge has no GPU either, so its run metadata (the GPU's name) is left out.
    monkeypatch.setattr("ssmkit.harness.judge.run_metadata", lambda *args: {})
    out = tmp_path / "report.json"
    code = run_granite_judge(ADVERSARIAL / "granite_correct.py", panels / "granite.json", out, "cuda", options())
    report = json.loads(out.read_text())
    assert code == 2 and report["score"] == 0 and "failure" not in report
    assert "cannot start the candidate worker" in report["refused"]
    assert "cannot use the device 'cuda'" in report["refused"]
    assert "VERDICT: REFUSED granite" in capsys.readouterr().out


def test_correct_mamba3_solver_passes_and_scores_about_1x_against_itself(panels, tmp_path):
    code, report = judge("mamba3", "mamba3_correct.py", panels, tmp_path, pairs=3)
    assert code == 0, report.get("failure")
    assert report["passed"] and all(c["ok"] for c in report["checks"])
    assert 0.5 < report["score"] == report["geomean"] < 2.0


@pytest.mark.parametrize("name, check, reason", [
    ("mamba3_small_error.py", "ragged dv.error", "> bound"),
    ("mamba3_mutates_input.py", "ragged input immutability", "wrote into its inputs ['dt']"),
])
def test_mamba3_adversary_fails_with_the_right_reason(panels, tmp_path, name, check, reason):
    code, report = judge("mamba3", name, panels, tmp_path)
    assert code == 1 and report["score"] == 0
    assert report["failure"]["check"] == check and reason in report["failure"]["reason"]
