"""GPU memory of the Mamba-3 full-VJP entry's two paths, per case and scale of its sequence lengths.

Per case (cases.json) at each scale: the direct call's (graph=False) peak memory above what its arguments hold (the
workspace it allocates and frees within the call, and its 16 results), and what one captured graph keeps between
calls (``ssmkit.mamba3.graph``: its static arguments and results, the results it hands out next, and its private
memory pool, which holds the workspace of the captured kernels), in MiB: the device memory PyTorch keeps reserved
with the graph alive, after emptying its cache, less the same before the graph (``torch.cuda.memory_allocated``
would leave the pool's blocks out: session 44's run 2 measured so, a third of the real figure). The graph is dropped
after each case. What ``GRAPH_MAX_CALL_BYTES`` and ``MAX_GRAPHS`` weigh against the
graph's speed at long sequences (bench/mamba3/NOTES.md "Session 44").
Usage (CUDA): PYTHONPATH=src python bench/mamba3_graph_memory.py --out FILE [--cases c1,c8] [--scales 1,2,4,8]
"""
import argparse
import gc
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mamba3_bench import named_cases  # noqa: E402

from ssmkit.harness.report import run_metadata, write_json  # noqa: E402
from ssmkit.mamba3 import graph as graph_module  # noqa: E402
from ssmkit.mamba3.inputs import make_inputs  # noqa: E402
from ssmkit.mamba3.op import mamba3_siso_varlen_joint_states_full_vjp  # noqa: E402

MIB = 2.0 ** 20


def _reserved_after_emptying() -> int:
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return torch.cuda.memory_reserved()


def measure(seqlens: list[int], seed: int) -> dict:
    """MiB: the direct call's peak above its arguments, a captured graph's retained memory (reserved), and the part
    of it outside the graph's pool (allocated)."""
    args = make_inputs(seqlens, seed, device="cuda")
    graph_module.clear_graphs()
    base_reserved = _reserved_after_emptying()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    results = mamba3_siso_varlen_joint_states_full_vjp(**args, graph=False)
    torch.cuda.synchronize()
    direct_peak = torch.cuda.max_memory_allocated() - base
    del results
    for _ in range(3):  # the first call captures, the later ones replay
        results = mamba3_siso_varlen_joint_states_full_vjp(**args, graph=True)
    del results
    retained = _reserved_after_emptying() - base_reserved
    allocated = torch.cuda.memory_allocated() - base  # (the graph's tensors outside its pool only)
    graph_module.clear_graphs()
    return {"direct_peak_mib": direct_peak / MIB, "graph_retained_mib": retained / MIB,
            "graph_allocated_mib": allocated / MIB}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cases", default="c1_four_mixed,c8_small_three")
    ap.add_argument("--scales", default="1,2,4,8")
    args = ap.parse_args()
    cases = named_cases(args.cases, args.scales)
    graph_module.MAX_CAPTURES = 10 ** 6  # (one capture per case and scale)
    rows = []
    with torch.no_grad():
        for case in cases:
            seqlens = case["seqlens"]
            row = dict(case=case["name"], T=sum(seqlens), S=len(seqlens),
                       call_bytes=graph_module.call_bytes(sum(seqlens), len(seqlens)), **measure(seqlens, case["seed"]))
            rows.append(row)
            print(f"{row['case']:22s} T {row['T']:6d}  direct peak {row['direct_peak_mib']:8.1f} MiB"
                  f"  graph retained {row['graph_retained_mib']:8.1f} MiB (outside its pool"
                  f" {row['graph_allocated_mib']:7.1f})", flush=True)
    write_json(args.out, dict(run_metadata(None, "cuda"), rows=rows,
                              graph_max_call_bytes=graph_module.GRAPH_MAX_CALL_BYTES,
                              max_graphs=graph_module.MAX_GRAPHS))
    print("json:", args.out)


if __name__ == "__main__":
    main()
