"""Two Granite candidates against each other in one process, per bench workload, timed as `granite bench` times.

`granite bench` pairs a candidate with the eager reference (seconds per call at the long prefills); to compare two
fast layers directly, e.g. the fast layer against the vLLM-kernel layer (bench/granite_vllm_candidate.py), this pairs
them with the harness's own pieces: the same weights (``default_slice``), inputs (``make_inputs``, 3 rotations),
calls (``timed_side``: a real forward, the decode cache restored before each call) and paired A/B/B/A timing
(``paired_abba``, CUDA events from an idle GPU, host time included; one call a side per pair by default: two
near-equal layers, unlike `granite bench`'s pair with the slow reference). Per workload: each side's median ms, the
ratio (A / B: above 1, B is faster), its spread, and the outputs' norm-relative difference of one call each; a
workload that fails is recorded with its error; the JSON is written after every workload.
Usage (CUDA): PYTHONPATH=src python bench/granite_candidate_ab.py --a candidates/granite_fast.py \\
    --b bench/granite_vllm_candidate.py [--workloads prefill_b1_l4096,...] [--pairs 32] [--inner 1] [--out F.json]
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


def measure(w, layers, hidden: int, device, pairs: int, inner: int) -> dict:
    """One workload: each side's median ms, A / B, its spread, the outputs' norm-relative difference."""
    input_sets = [make_inputs(w, hidden, device, torch.bfloat16, r) for r in range(ROTATIONS)]
    sides = [timed_side(layer, w, input_sets) for layer in layers]
    outs = [call(prepare())[0].double() for prepare, call in sides]
    diff = ((outs[0] - outs[1]).norm() / outs[1].norm().clamp_min(1e-30)).item()
    timing = paired_abba(sides[0], sides[1], device, pairs=pairs, inner_b=inner, warmup=2)
    return {"workload": w.name, "a_ms": timing.a_median_ms, "b_ms": timing.b_median_ms, "a_over_b": timing.speedup,
            "spread": timing.spread, "output_rel_diff": diff}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="candidate file of side A")
    ap.add_argument("--b", required=True, help="candidate file of side B")
    ap.add_argument("--workloads", default=None, help="comma-separated bench workload names (default: all)")
    ap.add_argument("--pairs", type=int, default=32)
    ap.add_argument("--inner", type=int, default=1,
                    help="side B calls per pair (median taken); 1: both sides alike (B's repeats would find its "
                         "weights in L2, A's single call not)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--device", default="cuda", help="cuda; cpu (TRITON_INTERPRET=1, the CPU workloads) only checks "
                                                     "the script: its times mean nothing")
    args = ap.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("granite_candidate_ab needs a CUDA GPU (or --device cpu to check the script)")
    device = torch.device(args.device)
    layer_slice = default_slice()
    layers = [build_layer(load_granite_candidate(path), layer_slice, device, torch.bfloat16)
              for path in (args.a, args.b)]
    todo = select(load_workloads(default_workloads_path(device.type)), "bench")
    if args.workloads:
        todo = [w for w in todo if w.name in args.workloads.split(",")]
        if not todo:
            ap.error(f"no bench workload is named in --workloads {args.workloads}")
    rows = []
    columns = ("workload", "a_ms", "b_ms", "a_over_b", "spread", "output_rel_diff", "error")
    for w in todo:
        try:
            with torch.no_grad():
                row = measure(w, layers, layer_slice.config.hidden_size, device, args.pairs, args.inner)
            print(f"{w.name}: A {row['a_ms']:.4f} ms, B {row['b_ms']:.4f} ms, A/B {row['a_over_b']:.3f} "
                  f"(spread {row['spread']:.2f}), outputs differ by {row['output_rel_diff']:.2e}", flush=True)
        except Exception as exc:  # (an OOM or a failing side: recorded, the other workloads still run)
            first = (str(exc).splitlines() or [""])[0][:200]
            row = {"workload": w.name, "error": f"{type(exc).__name__}: {first}"}
            print(f"{w.name}: {row['error']}", flush=True)
        rows.append(row)
        if args.out:  # (after every workload: a cut-off run keeps what it measured)
            with open(args.out, "w") as f:
                json.dump({**run_metadata(None, device), "a": args.a, "b": args.b, "pairs": args.pairs,
                           "inner": args.inner, "rows": rows}, f, indent=1)
    print(format_table(list(columns), [[r.get(k) for k in columns] for r in rows]))
    if args.out:
        print(f"json: {args.out}")


if __name__ == "__main__":
    main()
