"""Mamba-3 full call: direct kernel launches vs one CUDA-graph replay (ssmkit.mamba3.graphed_call), same process.

Per visible case (src/ssmkit/mamba3/cases.json): the 16 results of both paths must be equal bit for bit on every
rotating input set; then, alternating the two paths, the median wall time per call (host timer around the call and
a synchronisation, 3 rotating input sets; the method of bench/mamba3_bench.py) and the GPU time per call
(torch.profiler: kernels and copies). Prints a table and writes JSON (--out).
Usage (CUDA): PYTHONPATH=src python bench/mamba3/graph_bench.py --out FILE [--cases c1_four_mixed,...]
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from mamba3_bench import gpu_ms, wall_ms  # noqa: E402  (bench/mamba3_bench.py: the shared timing method)

from ssmkit.harness.report import run_metadata  # noqa: E402
from ssmkit.harness.workloads import default_cases_path, load_cases  # noqa: E402
from ssmkit.mamba3.inputs import make_inputs  # noqa: E402
from ssmkit.mamba3.op import mamba3_siso_varlen_joint_states_full_vjp  # noqa: E402
from ssmkit.mamba3.shapes import RESULT_NAMES  # noqa: E402

ROTATE = 3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--cases", default=None, help="comma-separated case names (default: all)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("graph_bench needs a CUDA GPU")
    wanted = set(args.cases.split(",")) if args.cases else None
    rows = []
    print(f"{'case':<28}{'T':>6}  {'bitwise':>8}  {'direct wall/GPU ms':>19}  {'graph wall/GPU ms':>18}", flush=True)
    for case in load_cases(default_cases_path()):
        if wanted and case.name not in wanted:
            continue
        sets = [make_inputs(case.seqlens, case.seed + r, device="cuda") for r in range(ROTATE)]

        def direct(a):
            return mamba3_siso_varlen_joint_states_full_vjp(**a, cuda_graph=False)

        def graphed(a):
            return mamba3_siso_varlen_joint_states_full_vjp(**a, cuda_graph=True)

        mismatches = [f"set{r}:{name}" for r, a in enumerate(sets)
                      for name, x, y in zip(RESULT_NAMES, direct(a), graphed(a)) if not torch.equal(x, y)]
        times = {}
        for label, fn in (("direct", direct), ("graph", graphed), ("direct2", direct), ("graph2", graphed)):
            times[label] = (wall_ms(fn, sets), gpu_ms(fn, sets))
        row = {"case": case.name, "T": sum(case.seqlens), "bitwise_equal": not mismatches,
               "mismatches": mismatches,
               "direct": {"wall_ms": min(times["direct"][0], times["direct2"][0]),
                          "gpu_ms": min(times["direct"][1], times["direct2"][1])},
               "graph": {"wall_ms": min(times["graph"][0], times["graph2"][0]),
                         "gpu_ms": min(times["graph"][1], times["graph2"][1])},
               "runs": times}
        rows.append(row)
        d, g = row["direct"], row["graph"]
        print(f"{case.name:<28}{row['T']:>6}  {'yes' if not mismatches else 'NO':>8}  "
              f"{d['wall_ms']:>9.3f} / {d['gpu_ms']:.3f}  {g['wall_ms']:>9.3f} / {g['gpu_ms']:.3f}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({**run_metadata(None, "cuda"), "rows": rows}, f, indent=1)
        print(f"json: {args.out}")


if __name__ == "__main__":
    main()
