"""The Granite workload files follow the COMMON.md schema and hold the issue's bench shapes."""
import json
from importlib import resources

import pytest

REQUIRED = {"prefill": {"name", "kind", "batch", "lengths", "seed", "purpose"},
            "decode": {"name", "kind", "batch", "prefix", "steps", "seed", "purpose"}}
OPTIONAL = {"prefill": {"continue"}, "decode": set()}


def _load(name):
    return json.loads(resources.files("ssmkit.granite").joinpath(name).read_text())


@pytest.mark.parametrize("name", ["workloads.json", "workloads_cpu.json"])
def test_workload_file_schema(name):
    entries = _load(name)
    assert len({e["name"] for e in entries}) == len(entries), "names must be unique"
    for e in entries:
        kind = e["kind"]
        assert kind in REQUIRED, e
        assert REQUIRED[kind] <= set(e) <= REQUIRED[kind] | OPTIONAL[kind], e
        assert e["purpose"] in ("correctness", "bench") and isinstance(e["seed"], int)
        assert isinstance(e["batch"], int) and e["batch"] >= 1
        if kind == "prefill":
            assert len(e["lengths"]) == e["batch"] and all(isinstance(n, int) and n >= 1 for n in e["lengths"])
            cont = e.get("continue", [])
            assert all(isinstance(n, int) and n >= 1 for n in ([cont] if isinstance(cont, int) else cont))
        else:
            assert e["prefix"] >= 1 and e["steps"] >= 1
    assert {e["purpose"] for e in entries} == {"correctness", "bench"}
    assert {e["kind"] for e in entries if e["purpose"] == "correctness"} == {"prefill", "decode"}
    assert any("continue" in e for e in entries if e["purpose"] == "correctness")


def test_bench_workloads_are_the_issue_shapes():
    bench = {e["name"]: e for e in _load("workloads.json") if e["purpose"] == "bench"}
    assert set(bench) == {"prefill_b1_l4096", "prefill_b1_l16384", "prefill_varlen_b8",
                          "decode_b1", "decode_b8", "decode_b64"}
    assert bench["prefill_b1_l4096"]["lengths"] == [4096]
    assert bench["prefill_b1_l16384"]["lengths"] == [16384]
    assert bench["prefill_varlen_b8"]["lengths"] == [4096, 3100, 2048, 1500, 1024, 777, 512, 300]
    for b in (1, 8, 64):
        assert (bench[f"decode_b{b}"]["batch"], bench[f"decode_b{b}"]["prefix"], bench[f"decode_b{b}"]["steps"]) \
            == (b, 512, 1)


def test_cpu_workloads_are_small():
    for e in _load("workloads_cpu.json"):
        assert e["batch"] <= 4
        cont = e.get("continue", 0)
        longest = max(e["lengths"]) + sum([cont] if isinstance(cont, int) else cont) if e["kind"] == "prefill" \
            else e["prefix"] + e["steps"]
        assert longest <= 300, e
