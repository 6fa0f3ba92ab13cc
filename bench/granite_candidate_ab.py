"""Two Granite candidates against each other in one process, per bench workload, timed as `granite bench` times.

`granite bench` pairs a candidate with the eager reference (seconds per call at the long prefills); to compare two
fast layers directly, e.g. the fast layer against the vLLM-kernel layer (bench/granite_vllm_candidate.py), this pairs
them with the harness's own pieces: the same weights (``default_slice``), inputs (``make_inputs``, 3 rotations),
calls (``timed_side``: a real forward, the decode cache restored before each call) and paired A/B/B/A timing
(``paired_abba``, CUDA events from an idle GPU, host time included). Per workload: each side's median ms, the ratio
(A / B: above 1, B is faster), its spread, and the outputs' norm-relative difference of one call each.
Usage (CUDA): PYTHONPATH=src python bench/granite_candidate_ab.py --a candidates/granite_fast.py \\
    --b bench/granite_vllm_candidate.py [--workloads prefill_b1_l4096,...] [--pairs 16] [--inner 5] [--out F.json]
    [--device cpu: under TRITON_INTERPRET=1 with the CPU workloads, a check of the script only]
"""
import argparse
import json

import torch

from ssmkit.harness.candidate import load_granite_candidate
from ssmkit.harness.granite_bench import ROTATIONS, timed_side
from ssmkit.harness.granite_run import build_layer, default_slice, make_inputs
from ssmkit.harness.report import format_table, run_metadata
from ssmkit.harness.timing import paired_abba
from ssmkit.harness.workloads import default_workloads_path, load_workloads, select


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="candidate file of side A")
    ap.add_argument("--b", required=True, help="candidate file of side B")
    ap.add_argument("--workloads", default=None, help="comma-separated bench workload names (default: all)")
    ap.add_argument("--pairs", type=int, default=16)
    ap.add_argument("--inner", type=int, default=5, help="side B calls per pair (median taken)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--device", default="cuda", help="cuda; cpu (TRITON_INTERPRET=1, the CPU workloads) only checks "
                                                     "the script: its times mean nothing")
    args = ap.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("granite_candidate_ab needs a CUDA GPU (or --device cpu to check the script)")
    device = torch.device(args.device)
    layer_slice = default_slice()
    hidden = layer_slice.config.hidden_size
    layers = [build_layer(load_granite_candidate(path), layer_slice, device, torch.bfloat16)
              for path in (args.a, args.b)]
    todo = select(load_workloads(default_workloads_path(device.type)), "bench")
    if args.workloads:
        todo = [w for w in todo if w.name in args.workloads.split(",")]
    rows = []
    with torch.no_grad():
        for w in todo:
            input_sets = [make_inputs(w, hidden, device, torch.bfloat16, r) for r in range(ROTATIONS)]
            sides = [timed_side(layer, w, input_sets) for layer in layers]
            outs = [call(prepare())[0].double() for prepare, call in sides]
            diff = ((outs[0] - outs[1]).norm() / outs[1].norm().clamp_min(1e-30)).item()
            timing = paired_abba(sides[0], sides[1], device, pairs=args.pairs, inner_b=args.inner, warmup=2)
            rows.append({"workload": w.name, "a_ms": timing.a_median_ms, "b_ms": timing.b_median_ms,
                         "a_over_b": timing.speedup, "spread": timing.spread, "output_rel_diff": diff})
            print(f"{w.name}: A {timing.a_median_ms:.4f} ms, B {timing.b_median_ms:.4f} ms, A/B {timing.speedup:.3f} "
                  f"(spread {timing.spread:.2f}), outputs differ by {diff:.2e}", flush=True)
    print(format_table(["workload", "a_ms", "b_ms", "a_over_b", "spread", "output_rel_diff"],
                       [[r[k] for k in ("workload", "a_ms", "b_ms", "a_over_b", "spread", "output_rel_diff")]
                        for r in rows]))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({**run_metadata(None, device), "a": args.a, "b": args.b, "pairs": args.pairs,
                       "inner": args.inner, "rows": rows}, f, indent=1)
        print(f"json: {args.out}")


if __name__ == "__main__":
    main()
