"""Where a Granite decode call's time goes against its floors, in one process on the GPU.

Per decode bench workload (B = 1, 8, 64; FastMambaLayer at its defaults, or with ``--attrs`` JSON):
- ``call_us``: the harness's per-call time (``time_call``: synchronise, CUDA events around ``layer(token, cache)``,
  the cache restored outside the timed region), as ``granite bench`` times a side.
- ``replay_us``: the same events around the layer's captured decode graph alone (``decode_io`` "mapped", the
  layer's own objects: ``_decode_bound``, ``_DecodeGraph``): the token already in its buffer,
  the output preallocated, a post of their addresses and ``graph.replay()``; what "a layer in a CUDA graph" costs
  a caller that bypasses the Python forward (the issue's vLLM figures are of that kind).
- ``gpu_us``: the graph's GPU time with the host out of the way: a replay queued behind a ~1 ms sleep kernel, events
  around the replay only.
- ``host_us``: perf_counter around the call (its enqueue cost), synchronised between calls (``call_us`` and
  ``host_us``: granite_host_timeline.py's ``latency_and_enqueue``).
Host floors of any Python layer call on this machine: ``noop_module_us`` (a module whose forward returns a
preallocated tensor) and ``tiny_graph_replay_us`` (a one-kernel graph's bare replay), timed like ``call_us``.
Byte ceilings: ``state_rmw_tbs`` (an in-place ``mul_`` over a B=64-sized fp32 state, bytes read + written over
its time) and ``copy_tbs`` (device copies of 1x, 4x and 16x that size).
Usage (CUDA): SSMKIT_GIT_COMMIT=SHA PYTHONPATH=src python bench/granite_decode_floor.py --out DIR [--attrs JSON]
[--calls 300]
Prints a table and writes DIR/granite_decode_floor.json (command, commit, GPU, versions, medians).
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from granite_host_timeline import latency_and_enqueue  # noqa: E402

from ssmkit.granite import FastMambaLayer
from ssmkit.harness.granite_bench import timed_side
from ssmkit.harness.granite_run import build_layer, default_slice, make_inputs
from ssmkit.harness.report import format_table, run_metadata, write_json
from ssmkit.harness.workloads import DECODE, default_workloads_path, load_workloads


def events_us(fn, reps: int, before=None) -> float:
    """Median us between CUDA events around ``fn()`` (synchronised before each; ``before()`` enqueued first)."""
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        if before is not None:
            before()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times[3:])


def host_floors(hidden: int, reps: int) -> dict:
    """Per-call time of a no-op module and of a one-kernel graph's bare replay, timed like a layer call."""
    out = torch.empty(1, 1, hidden, device="cuda", dtype=torch.bfloat16)

    class Noop(torch.nn.Module):
        def forward(self, x, cache=None):
            return out, cache

    noop, x = Noop(), torch.randn(1, 1, hidden, device="cuda", dtype=torch.bfloat16)
    small = torch.zeros(1024, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        small.add_(1.0)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        small.add_(1.0)
    return {"noop_module_us": events_us(lambda: noop(x), reps),
            "tiny_graph_replay_us": events_us(graph.replay, reps)}


def byte_ceilings(config, reps: int) -> dict:
    """In-place read-modify-write rate over a B=64-sized fp32 state, and device-copy rates at 1x, 4x and 16x that
    size (TB/s, bytes read + written over the median time): the byte ceilings the decode floor is counted with."""
    n = 64 * config.num_heads * config.head_dim * config.d_state
    a = torch.randn(n, device="cuda")
    rmw = events_us(lambda: a.mul_(0.999), reps)
    result = {"state_bytes": 4 * n, "state_rmw_us": rmw, "state_rmw_tbs": 8 * n / rmw / 1e6, "copy_tbs": {}}
    del a
    for scale in (1, 4, 16):
        src, dst = torch.randn(scale * n, device="cuda"), torch.empty(scale * n, device="cuda")
        result["copy_tbs"][f"{4 * scale * n / 1e6:.0f} MB"] = 8 * scale * n / events_us(lambda: dst.copy_(src),
                                                                                         reps) / 1e6
        del src, dst
    return result


def decode_row(layer, w, hidden: int, reps: int) -> dict:
    sets = [make_inputs(w, hidden, "cuda", torch.bfloat16, rotation=r) for r in range(3)]
    prepare, call = timed_side(layer, w, sets)
    timed = latency_and_enqueue(prepare, call, reps)  # (its warm-up calls capture the graphs)
    token, cache = prepare()
    binding = layer._decode_bound[cache.ssm_state.data_ptr()]
    graph = binding.graph
    src, out = token.contiguous(), torch.empty_like(graph.static_out)

    def replay():
        graph.io.replay(graph.graph, src, (out,))

    return {"workload": w.name, "batch": w.batch, "call_us": timed["latency_us"], "host_us": timed["enqueue_us"],
            "replay_us": events_us(replay, reps),
            "gpu_us": events_us(replay, reps, before=lambda: torch.cuda._sleep(2_000_000))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--attrs", type=json.loads, default={}, help="FastMambaLayer attributes (JSON)")
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    result = run_metadata(sys.argv, "cuda")  # (SSMKIT_GIT_COMMIT names the commit on the device copy)
    layer_slice = default_slice()
    layer = build_layer(FastMambaLayer, layer_slice, "cuda", torch.bfloat16)
    for key, value in args.attrs.items():
        setattr(layer, key, value)
    if not layer.use_cuda_graphs or layer.decode_io != "mapped":
        ap.error("the replay and GPU columns time the layer's mapped decode graph: keep use_cuda_graphs and "
                 "decode_io 'mapped'")
    hidden = layer_slice.config.hidden_size
    workloads = [w for w in load_workloads(default_workloads_path("cuda")) if w.purpose == "bench" and w.kind == DECODE]
    with torch.no_grad():
        result["attrs"] = args.attrs
        result["host_floors"] = host_floors(hidden, args.calls)
        result["byte_ceilings"] = byte_ceilings(layer_slice.config, 50)
        result["rows"] = [decode_row(layer, w, hidden, args.calls) for w in workloads]
    keys = ("call_us", "host_us", "replay_us", "gpu_us")
    print(format_table(["workload", *keys], [[r["workload"], *(round(r[k], 1) for k in keys)] for r in result["rows"]]))
    print(json.dumps(result["host_floors"]), json.dumps(result["byte_ceilings"]))
    write_json(args.out / "granite_decode_floor.json", result)


if __name__ == "__main__":
    main()
