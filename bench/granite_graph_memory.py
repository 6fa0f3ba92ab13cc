"""Memory the fast layer's prefill graphs hold (GPU): per B = 1 bench workload, the layer called as the harness calls
it (3 rotating inputs, 4 rounds: with ``prefill_address_graphs`` on, 3 addressed graphs and the kernels graph), then
``torch.cuda.memory_allocated`` / ``memory_reserved`` beside the same with the switch off (one kernels graph), each on
a fresh layer after ``empty_cache``. ``granite bench``'s peak-memory column measures one call before its timed pairs,
before an address's second sighting, so it does not show the addressed graphs; this does.
Usage (CUDA): PYTHONPATH=src python bench/granite_graph_memory.py [--workloads a,b] [--out F.json]
"""
import argparse
import gc
import json

import torch

from granite_call_gap import harness_side
from granite_profile import bench_workloads, configured_layer
from ssmkit.granite import FastMambaLayer
from ssmkit.harness.granite_run import default_slice
from ssmkit.harness.report import run_metadata


def held_mib(switch: bool, w, sl, device) -> dict:
    """Allocated and reserved MiB after 12 calls of a fresh layer (``prefill_address_graphs`` = switch) on ``w``,
    with the call's own results dropped, and the layer's graph modes."""
    gc.collect()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated(device), torch.cuda.memory_reserved(device)
    layer = configured_layer(FastMambaLayer, sl, device, {"prefill_address_graphs": switch})
    prepare, call = harness_side(layer, w, sl.config.hidden_size, device)
    with torch.no_grad():
        for _ in range(12):
            call(prepare())
    torch.cuda.synchronize()
    got = {"allocated_MiB": (torch.cuda.memory_allocated(device) - base[0]) / 2**20,
           "reserved_MiB": (torch.cuda.memory_reserved(device) - base[1]) / 2**20,
           "graphs": sorted(e.graph_mode for e in (*layer._prefill_graphs.values(), *layer._addressed_graphs.values()))}
    layer.clear_graphs()
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default="prefill_b1_l4096,prefill_b1_l16384")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("granite_graph_memory needs a CUDA GPU")
    device = torch.device("cuda")
    sl = default_slice()
    rows = []
    for w in bench_workloads(args.workloads):
        for switch in (False, True):
            r = {"workload": w.name, "prefill_address_graphs": switch, **held_mib(switch, w, sl, device)}
            rows.append(r)
            print(f"{w.name:<20} address graphs {str(switch):<5} allocated {r['allocated_MiB']:8.1f} MiB  reserved "
                  f"{r['reserved_MiB']:8.1f} MiB  graphs {r['graphs']}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({**run_metadata(None, device), "command": "bench/granite_graph_memory.py", "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
