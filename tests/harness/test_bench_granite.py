"""``ssmkit granite bench`` on a tiny config (CPU) and the timing primitives it is built on."""
import json
import time
from pathlib import Path

import pytest

from ssmkit.cli import main
from ssmkit.harness.timing import abba_schedule, geomean, paired_abba, score_from_geomean

CANDIDATES = Path(__file__).parent / "candidates"
WORKLOADS = CANDIDATES / "tiny_workloads.json"
ROW_FIELDS = {"name", "reference_ms", "candidate_ms", "speedup", "peak_mem_bytes"}


def bench(tiny_slice, tmp_path, candidate=None):
    out, png = tmp_path / "bench.json", tmp_path / "bench.png"
    argv = ["granite", "bench", "--slice", tiny_slice, "--workloads", str(WORKLOADS), "--device", "cpu",
            "--reps", "2", "--inner", "2", "--json", str(out), "--plot", str(png)]
    rc = main(argv + (["--candidate", str(CANDIDATES / candidate)] if candidate else []))
    return rc, json.loads(out.read_text()), png


def test_bench_writes_json_with_every_field_and_a_png(tiny_slice, tmp_path):
    rc, report, png = bench(tiny_slice, tmp_path)
    assert rc == 0
    for key in ("command", "git_commit", "gpu", "torch", "triton", "timestamp", "geomean", "score"):
        assert report[key] is not None, key
    assert [r["name"] for r in report["workloads"]] == ["bench_prefill_b2", "bench_decode_b2"]
    for row in report["workloads"]:
        assert ROW_FIELDS <= set(row) and row["error"] is None
        assert row["reference_ms"] > 0 and row["candidate_ms"] > 0 and row["speedup"] > 0
    assert report["geomean"] == pytest.approx(geomean([r["speedup"] for r in report["workloads"]]))
    assert report["score"] == score_from_geomean(report["geomean"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_scores_zero_when_the_candidate_raises(tiny_slice, tmp_path):
    rc, report, _ = bench(tiny_slice, tmp_path, "granite_raises.py")
    assert rc == 1 and report["score"] == 0.0 and report["geomean"] == 0.0
    for row in report["workloads"]:
        assert row["speedup"] == 0.0 and "planted failure" in row["error"] and "candidate" in row["error"]


def test_abba_schedule_alternates_the_side_that_goes_first():
    assert abba_schedule(4) == [("a", "b"), ("b", "a"), ("a", "b"), ("b", "a")]


def test_paired_abba_measures_the_ratio_of_two_known_durations():
    slow = (lambda: 0.020, time.sleep)
    fast = (lambda: 0.005, time.sleep)
    result = paired_abba(slow, fast, "cpu", pairs=4, inner_b=2, warmup=0)
    assert len(result.ratios) == 4 and len(result.a_ms) == 4
    assert 2.5 < result.speedup < 4.5
    assert result.a_median_ms == pytest.approx(20, rel=0.5) and result.b_median_ms == pytest.approx(5, rel=0.8)


def test_geomean_and_score_follow_the_definitions():
    assert geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert geomean([3.0, 0.0]) == 0.0
    assert score_from_geomean(4.0) == pytest.approx(0.75)
    assert score_from_geomean(1.0) == 0.0 and score_from_geomean(0.5) == 0.0


def test_decode_timed_calls_start_from_the_same_cache_state_at_stable_addresses(tiny_slice):
    import torch

    from ssmkit.granite import ReferenceMambaLayer, load_slice
    from ssmkit.harness.granite_bench import timed_side
    from ssmkit.harness.granite_run import build_layer, make_inputs
    from ssmkit.harness.workloads import load_workloads

    layer_slice = load_slice(tiny_slice)
    layer = build_layer(ReferenceMambaLayer, layer_slice, "cpu", torch.bfloat16)
    w = next(w for w in load_workloads(WORKLOADS) if w.name == "bench_decode_b2")
    with torch.no_grad():
        prepare, call = timed_side(layer, w, [make_inputs(w, layer_slice.config.hidden_size, "cpu")])
        runs = []
        for _ in range(3):
            token, cache = prepare()
            out, _ = call((token, cache))
            runs.append((out, cache.ssm_state.clone(), cache.ssm_state.data_ptr(), cache.seqlen_offset))
    for out, state, ptr, offset in runs[1:]:
        assert torch.equal(out, runs[0][0]) and torch.equal(state, runs[0][1])
        assert ptr == runs[0][2] and offset == runs[0][3] == w.prefix + 1
