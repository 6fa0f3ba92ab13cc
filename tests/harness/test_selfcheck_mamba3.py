"""``ssmkit mamba3 selfcheck`` on tiny cases: the reference solver passes, planted defects fail with the right check.

The solvers wrap the eager baseline, so these tests stay fast on the CPU whatever the kernels' state (the package's
own entry runs the Triton kernels in the interpreter under the test suite; its own tests cover it).
"""
import json
from pathlib import Path

from ssmkit.cli import main

CANDIDATES = Path(__file__).parent / "candidates"
CASES = CANDIDATES / "mamba3_cases_tiny.json"
NAMES = ("ragged_three", "lengths_one_two")


def selfcheck(tmp_path, solver):
    out = tmp_path / "selfcheck.json"
    rc = main(["mamba3", "selfcheck", "--cases", str(CASES), "--device", "cpu", "--reps", "1", "--json", str(out),
               "--solver", str(CANDIDATES / solver)])
    return rc, json.loads(out.read_text())


def test_selfcheck_passes_the_reference_solver_with_a_positive_score(tmp_path):
    rc, report = selfcheck(tmp_path, "mamba3_reference_solver.py")
    assert rc == 0 and report["passed"] and report["failures"] == []
    assert [c["name"] for c in report["cases"]] == list(NAMES)
    for case in report["cases"]:
        checks = {c["quantity"] for c in case["checks"]}
        assert {"inputs.unchanged", "fresh_call.identical", "out.error", "dangles.error", "final_v.contract"} <= checks
        assert case["speedup"] > 0 and case["baseline_ms"] > 0 and case["solver_ms"] > 0
    assert report["score"] == report["geomean"] > 0


def test_selfcheck_fails_a_scaled_output_and_names_it(tmp_path):
    rc, report = selfcheck(tmp_path, "mamba3_planted_error.py")
    assert rc == 1 and report["score"] == 0.0 and report["geomean"] is None
    assert {(f["workload"], f["quantity"]) for f in report["failures"]} == {(n, "out.error") for n in NAMES}
    assert all(c["speedup"] is None for c in report["cases"])  # failed cases are not timed


def test_selfcheck_fails_a_solver_that_mutates_an_input(tmp_path):
    rc, report = selfcheck(tmp_path, "mamba3_mutates_input.py")
    assert rc == 1 and report["score"] == 0.0
    assert {(f["workload"], f["quantity"]) for f in report["failures"]} == {(n, "inputs.unchanged") for n in NAMES}
