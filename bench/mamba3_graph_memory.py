"""GPU memory of the Mamba-3 full-VJP entry's two paths, per case and scale of its sequence lengths.

Per case (cases.json) at each scale: the direct call's (graph=False) peak memory above what its arguments hold (the
workspace it allocates and frees within the call, and its 16 results), and what one captured graph keeps allocated
after its calls (``ssmkit.mamba3.graph``: its static workspace, the results it hands out next, its memory pool),
in MiB; the graph is dropped after each case. What ``GRAPH_MAX_CALL_BYTES`` and ``MAX_GRAPHS`` weigh against the
graph's speed at long sequences (bench/mamba3/NOTES.md "Session 44").
Usage (CUDA): PYTHONPATH=src python bench/mamba3_graph_memory.py --out FILE [--cases c1,c8] [--scales 1,2,4,8]
"""
import argparse
import json
from importlib import resources

import torch

from ssmkit.harness.report import run_metadata, write_json
from ssmkit.mamba3 import graph as graph_module
from ssmkit.mamba3.inputs import make_inputs
from ssmkit.mamba3.op import mamba3_siso_varlen_joint_states_full_vjp

MIB = 2.0 ** 20


def measure(seqlens: list[int], seed: int) -> dict:
    """MiB: the direct call's peak above its arguments, and a captured graph's retained memory."""
    args = make_inputs(seqlens, seed, device="cuda")
    graph_module.clear_graphs()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    results = mamba3_siso_varlen_joint_states_full_vjp(**args, graph=False)
    torch.cuda.synchronize()
    direct_peak = torch.cuda.max_memory_allocated() - base
    del results
    for _ in range(3):  # the first call captures, the later ones replay
        results = mamba3_siso_varlen_joint_states_full_vjp(**args, graph=True)
    del results
    torch.cuda.synchronize()
    retained = torch.cuda.memory_allocated() - base
    graph_module.clear_graphs()
    return {"direct_peak_mib": direct_peak / MIB, "graph_retained_mib": retained / MIB}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cases", default="c1_four_mixed,c8_small_three")
    ap.add_argument("--scales", default="1,2,4,8")
    args = ap.parse_args()
    cases = json.loads(resources.files("ssmkit.mamba3").joinpath("cases.json").read_text())
    cases = [c for c in cases if c["name"] in args.cases.split(",")]
    graph_module.MAX_CAPTURES = 10 ** 6  # (one capture per case and scale)
    rows = []
    with torch.no_grad():
        for scale in map(int, args.scales.split(",")):
            for case in cases:
                seqlens = [n * scale for n in case["seqlens"]]
                row = dict(case=case["name"], scale=scale, T=sum(seqlens), S=len(seqlens),
                           call_bytes=graph_module.call_bytes(sum(seqlens), len(seqlens)),
                           **measure(seqlens, case["seed"]))
                rows.append(row)
                print(f"{row['case']:20s} x{scale}  T {row['T']:6d}  direct peak {row['direct_peak_mib']:8.1f} MiB"
                      f"  graph retained {row['graph_retained_mib']:8.1f} MiB", flush=True)
    write_json(args.out, dict(run_metadata(None, "cuda"), rows=rows,
                              graph_max_call_bytes=graph_module.GRAPH_MAX_CALL_BYTES,
                              max_graphs=graph_module.MAX_GRAPHS))
    print("json:", args.out)


if __name__ == "__main__":
    main()
