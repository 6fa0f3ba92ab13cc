"""Per-workload GPU profile of a Granite layer: kernel list, GPU time per call, and the floors beside them.

For each bench workload (workloads.json, purpose "bench") the layer is called as `ssmkit granite bench` calls it
(``ssmkit.harness.granite_bench.timed_side``: rotating input sets, decode caches restored outside the call), warmed
up, then ``--calls`` calls run under torch.profiler. Printed and written as JSON: per kernel, launches and GPU
microseconds per layer call; the sum; the median wall time per call from CUDA events (host included); and the
floors (bench/granite/NOTES.md): GEMM FLOPs at 790 TFLOP/s, bytes between the GEMMs at 4.3 TB/s for a fully fused
design (19 KB per real token) and for the 5-kernel design (69 KB per real token: left-padded batches are packed),
decode weights + fp32 state.
``--set JSON``: layer attributes to set first (e.g. '{"cb_spread": false}'), for A/Bs of a switch.
Usage (CUDA): PYTHONPATH=src python bench/granite_profile.py [--candidate fast|reference] [--calls 20] [--set JSON]
    [--out F]
"""
import argparse
import json
import statistics
from collections import defaultdict

import torch

from ssmkit.granite import FastMambaLayer, ReferenceMambaLayer
from ssmkit.harness.granite_bench import timed_side
from ssmkit.harness.granite_run import build_layer, default_slice, make_inputs
from ssmkit.harness.report import run_metadata
from ssmkit.harness.timing import time_call
from ssmkit.harness.workloads import default_workloads_path, load_workloads

GEMM_FLOPS = 790e12  # bf16 GEMM ceiling on the H200 (KINDS.md; in_proj reached ~786 TFLOP/s at L=16384)
COPY_BYTES = 4.3e12  # device copy rate (KINDS.md / NOTES)


def floors_us(w, config) -> dict[str, float]:
    """Lower bounds in microseconds for one call of workload ``w`` (see the module docstring)."""
    c = config
    weights = 2 * (c.hidden_size * c.in_proj_dim + c.intermediate_size * c.hidden_size)  # bf16 bytes
    if w.kind == "prefill":
        real = sum(w.lengths)
        gemm = 2 * real * (c.hidden_size * c.in_proj_dim + c.intermediate_size * c.hidden_size) / GEMM_FLOPS
        return {"gemm_flops": gemm * 1e6, "fused_between_bytes": 19e3 * real / COPY_BYTES * 1e6,
                "five_kernel_between_bytes": 69e3 * real / COPY_BYTES * 1e6}  # packed layout: real tokens only
    state = 2 * w.batch * c.num_heads * c.head_dim * c.d_state * 4  # fp32 read + write
    return {"weights_and_state_bytes": (weights + state) / COPY_BYTES * 1e6}


def profile_workload(layer, w, hidden_size: int, device, calls: int) -> dict:
    """Kernel table (GPU us per call), profiled sum and median wall time per call of ``layer`` on ``w``."""
    input_sets = [make_inputs(w, hidden_size, device, torch.bfloat16, rotation=r) for r in range(3)]
    prepare, call = timed_side(layer, w, input_sets)
    with torch.no_grad():
        walls = [time_call(prepare, call, device) for _ in range(calls + 5)][5:]  # first 5: warm-up, captures
        args_list = [prepare() for _ in range(calls)]  # prepared outside the profiled region
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for args in args_list:
                call(args)
            torch.cuda.synchronize()
    # decode caches: every prepared tuple restores in place, so calls after the first see the stepped cache; the
    # kernels' work does not depend on the state values.
    per_kernel = defaultdict(lambda: [0, 0.0])
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            per_kernel[e.name][0] += 1
            per_kernel[e.name][1] += e.device_time
    kernels = sorted(({"name": n, "launches_per_call": k / calls, "us_per_call": t / calls}
                      for n, (k, t) in per_kernel.items()), key=lambda r: -r["us_per_call"])
    return {"kernels": kernels, "gpu_us_per_call": sum(r["us_per_call"] for r in kernels),
            "wall_us_per_call_median": statistics.median(walls) * 1e3}


def configured_layer(cls, layer_slice, device, attributes: dict):
    """``cls`` built on the slice (bf16, eval) with ``attributes`` set (``--set``; an unknown name exits)."""
    layer = build_layer(cls, layer_slice, device, torch.bfloat16)
    for name, value in attributes.items():
        if not hasattr(layer, name):
            raise SystemExit(f"the layer has no attribute {name!r}")
        setattr(layer, name, value)
    return layer


def add_layer_run_args(ap: argparse.ArgumentParser) -> None:
    """The options this script shares with granite_call_gap.py: --calls, --workloads, --set, --out."""
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--workloads", default=None, help="comma-separated names (default: every bench workload)")
    ap.add_argument("--set", type=json.loads, default={}, help="layer attributes to set, as a JSON object")
    ap.add_argument("--out", default=None)


def bench_workloads(names: str | None) -> list:
    """The bench workloads of the CUDA workload file, or those of them in the comma-separated ``names``."""
    wanted = set(names.split(",")) if names else None
    return [w for w in load_workloads(default_workloads_path("cuda"))
            if w.purpose == "bench" and (not wanted or w.name in wanted)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidate", choices=["fast", "reference"], default="fast")
    add_layer_run_args(ap)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("granite_profile needs a CUDA GPU (kernel times come from the CUDA profiler)")
    device = torch.device("cuda")
    sl = default_slice()
    layer = configured_layer(FastMambaLayer if args.candidate == "fast" else ReferenceMambaLayer, sl, device,
                             args.set)
    rows = []
    for w in bench_workloads(args.workloads):
        print(f"== {w.name}", flush=True)
        r = profile_workload(layer, w, sl.config.hidden_size, device, args.calls)
        r.update(workload=w.name, floors_us=floors_us(w, sl.config))
        rows.append(r)
        for k in r["kernels"]:
            print(f"  {k['us_per_call']:9.1f} us  x{k['launches_per_call']:.0f}  {k['name'][:90]}")
        floors = ", ".join(f"{n} {v:.1f}" for n, v in r["floors_us"].items())
        print(f"  GPU sum {r['gpu_us_per_call']:.1f} us, wall median {r['wall_us_per_call_median']:.1f} us; "
              f"floors (us): {floors}", flush=True)
    doc = {**run_metadata(None, device), "attributes": args.set, "rows": rows}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"json: {args.out}")


if __name__ == "__main__":
    main()
