"""The trusted harness: workload files, comparisons and tolerances, timing, candidate loading, reports, and the
commands built on them (Granite verify/bench, Mamba-3 selfcheck; the judge lives in ``judge.py``).

Data flows one way: cli -> harness -> (reference | candidate) -> kernels. Kernels and candidates never import the
harness; the harness never trusts a candidate's results without checking them.
"""
