"""Where the host time of a Granite layer call goes (decode and left-padded prefill), on the GPU machine.

The harness times a call from a CUDA event recorded on an idle GPU to one recorded after the call, so every
microsecond the host spends before the call's work reaches the GPU counts. This script measures, per workload:
- ``latency_us``: the harness call time (``time_call``, CUDA events, median of ``--calls``);
- ``enqueue_us``: host time of the same call (perf_counter around it, no sync inside; median);
- for decode, the same two numbers for the captured graph's pieces alone (replay; copy in + replay + clone);
- host cost per primitive torch operation on this machine (copy_, clone, empty, replay, event record, a small
  reduction, ``tolist``), each the mean of ``--reps`` back-to-back calls;
- for the B=8 left-padded prefill, a torch.profiler table of host (CPU) time per operator over 5 calls, the mask
  check alone (the eager ``mask_facts``, the one-launch ``mask_row_facts``, one D2H copy of the mask followed by
  host-side checks), and the call's latency with the layer's mask check against the eager one, alternating.
Usage (CUDA): PYTHONPATH=src python bench/granite_host_timeline.py [--calls 200] [--primitives-only] [--out F.json]
"""
import argparse
import json
import statistics
import time

import torch

from ssmkit.granite import FastMambaLayer
from ssmkit.granite.reference import ReferenceMambaLayer, mask_facts
from ssmkit.harness.granite_bench import timed_side
from ssmkit.harness.granite_run import build_layer, default_slice, make_inputs
from ssmkit.harness.report import run_metadata
from ssmkit.harness.timing import time_call
from ssmkit.harness.workloads import default_workloads_path, load_workloads
from ssmkit.kernels.granite.mask_facts import PendingMaskFacts, _launch_mask_facts, mask_row_facts


def host_us(fn, reps: int) -> float:
    """Mean host time of ``fn()`` over ``reps`` back-to-back calls (us), GPU drained before and after."""
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / reps * 1e6


def latency_and_enqueue(prepare, call, calls: int) -> dict[str, float]:
    """Median harness call time and median host enqueue time of ``call(prepare())``, both in us."""
    for _ in range(5):
        call(prepare())
    lat = [time_call(prepare, call, "cuda") * 1e3 for _ in range(calls)]
    enq = []
    for _ in range(calls):
        args = prepare()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        call(args)
        enq.append((time.perf_counter() - t0) * 1e6)
        torch.cuda.synchronize()
    return {"latency_us": statistics.median(lat), "enqueue_us": statistics.median(enq)}


def primitive_costs(reps: int) -> dict[str, float]:
    """Host us per primitive operation on this machine."""
    x = torch.randn(1, 1, 1536, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y.add_(1)
    ev = torch.cuda.Event()
    mask = torch.ones(8, 4096, device="cuda", dtype=torch.int64)
    small = torch.arange(10, device="cuda")
    return {
        "copy_": host_us(lambda: y.copy_(x), reps),
        "clone": host_us(lambda: x.clone(), reps),
        "empty_like": host_us(lambda: torch.empty_like(x), reps),
        "replay(1 kernel)": host_us(g.replay, reps),
        "event.record": host_us(ev.record, reps),
        "mask != 0": host_us(lambda: mask != 0, reps),
        "sum(1)": host_us(lambda: mask.sum(1), reps),
        "tolist (sync)": host_us(lambda: small.tolist(), reps),
        "is_current_stream_capturing": host_us(torch.cuda.is_current_stream_capturing, reps),
        "mask kernel launch": host_us(lambda: _launch_mask_facts(mask), reps),
        "mask_row_facts": host_us(lambda: mask_row_facts(mask), reps),
        "PendingMaskFacts + result": host_us(lambda: PendingMaskFacts(mask).result(), reps),
    }


def decode_pieces(layer, cache, token, calls: int) -> dict[str, dict[str, float]]:
    """Latency and enqueue of the bound decode graph's pieces: the replay alone ("mapped" graphs: with the token
    and a live output posted first, so the replay reads and writes valid memory) and ``_DecodeGraph.run`` (the
    call's I/O included), labelled with the layer's ``decode_io``."""
    graph = layer._decode_bound[cache.ssm_state.data_ptr()].graph
    if graph.io is None:
        replay = graph.graph.replay
    else:
        out = torch.empty_like(graph.static_out)

        def replay():
            graph.io.replay(graph.graph, token, (out,))
    out_pieces = {}
    for name, fn in (("replay", replay), (f"run (decode_io={layer.decode_io})", lambda: graph.run(token))):
        out_pieces[name] = latency_and_enqueue(lambda: None, lambda _, f=fn: f(), calls)
    return out_pieces


def mask_check_costs(mask: torch.Tensor, reps: int) -> dict[str, float]:
    """Host us of ``mask_facts`` against one D2H copy of the mask plus host-side checks (both sync)."""
    def host_side():
        m = mask.cpu()
        real = m != 0
        return bool((m != real).any()), real.sum(1).tolist(), bool((real[:, :-1] > real[:, 1:]).any())

    return {"mask_facts": host_us(lambda: mask_facts(mask), reps),
            "mask kernel launch only (with its output's allocation)": host_us(lambda: _launch_mask_facts(mask), reps),
            "mask_row_facts": host_us(lambda: mask_row_facts(mask), reps),
            "cpu copy + host checks": host_us(host_side, reps)}


def attribute_ab(layer, name: str, values: dict, prepare, call, calls: int) -> dict[str, float]:
    """Median call latency (us) per labelled value of ``layer.<name>`` (``values``: label -> value), the values
    alternating in blocks of 10 calls after one warm-up call each (captures). Set as instance attributes; the
    layer's own attribute is restored (an instance attribute it did not have is removed)."""
    had, saved = name in layer.__dict__, layer.__dict__.get(name)
    times = {label: [] for label in values}
    try:
        for value in values.values():
            setattr(layer, name, value)
            call(prepare())
        labels = list(values)
        for i in range(len(labels) * (calls // 10)):
            label = labels[i % len(labels)]
            setattr(layer, name, values[label])
            times[label] += [time_call(prepare, call, "cuda") * 1e3 for _ in range(10)]
    finally:
        if had:
            setattr(layer, name, saved)
        else:
            delattr(layer, name)
    return {label: statistics.median(t) for label, t in times.items()}


def cpu_op_table(prepare, call, n: int = 5, top: int = 25) -> list[dict]:
    """torch.profiler host (CPU) time per operator over ``n`` calls, per call, largest first."""
    args_list = [prepare() for _ in range(n)]
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for args in args_list:
            call(args)
            torch.cuda.synchronize()  # (one call at a time: no call waits on the previous one's GPU work)
    rows = [{"op": e.key, "calls": e.count / n, "cpu_self_us": e.self_cpu_time_total / n,
             "cpu_total_us": e.cpu_time_total / n} for e in prof.key_averages()]
    return sorted(rows, key=lambda r: -r["cpu_self_us"])[:top]


def gpu_gaps(prepare, call, n: int = 3, top: int = 8) -> list[dict]:
    """GPU idle time inside ``n`` profiled calls: for each call (a record_function range on the host), the delay
    from the call's start to its first GPU activity, the GPU busy time, the span to the last activity's end, and
    the ``top`` largest gaps between consecutive GPU activities with the names on both sides."""
    args_list = [prepare() for _ in range(n)]
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for args in args_list:
            with torch.profiler.record_function("timed_call"):
                call(args)
            torch.cuda.synchronize()
    events = prof.events()
    calls = sorted((e.time_range.start, e.time_range.end) for e in events if e.name == "timed_call"
                   and e.device_type == torch.autograd.DeviceType.CPU)
    gpu = sorted((e.time_range.start, e.time_range.end, e.name) for e in events  # (the range's GPU-side copy
                 if e.device_type == torch.autograd.DeviceType.CUDA and e.name != "timed_call")  # is not work)
    out = []
    for i, (c0, c1) in enumerate(calls):
        limit = calls[i + 1][0] if i + 1 < len(calls) else float("inf")
        mine = [g for g in gpu if c0 <= g[0] < limit]
        if not mine:
            continue
        gaps = sorted(((b[0] - a[1], a[2][:50], b[2][:50]) for a, b in zip(mine, mine[1:])), reverse=True)[:top]
        out.append({"first_gpu_after_us": mine[0][0] - c0, "host_call_us": c1 - c0,
                    "gpu_busy_us": sum(g[1] - g[0] for g in mine), "span_us": max(g[1] for g in mine) - c0,
                    "first": mine[0][2][:50], "gaps": [{"us": g, "after": a, "before": b} for g, a, b in gaps]})
    return out


# (owner, attribute) pairs whose calls host_marks time-stamps: the forward's steps up to the first GEMM and after
MARKED = [("ssmkit.granite.layer.FastMambaLayer", n) for n in (
    "forward", "_bound_call", "_guessed_packed_prefill", "check_forward_args_with_facts", "_mask_facts", "_unsupported",
    "_prefill", "_prefill_graph", "_replay_prefill", "_in_proj", "_out_proj")] + [
    ("ssmkit.granite.layer._Packing", "gather"), ("ssmkit.kernels.granite.mask_facts.PendingMaskFacts", "result"),
    ("ssmkit.granite.layer._PrefillGraph", "replay"), ("ssmkit.granite.layer._PrefillGraph", "run_mapped"),
    ("ssmkit.granite.layer._DecodeGraph", "run"), ("ssmkit.kernels.common.mapped_io.MappedIO", "post"),
    ("ssmkit.kernels.common.mapped_io.MappedIO", "replay")]


def host_marks(prepare, call, n: int = 30) -> dict[str, list[float]]:
    """Host time stamps (us after the call's start; median over ``n`` calls, one at a time) of entering and
    leaving each method in MARKED that the call runs, so the host path to the first GEMM can be read step by
    step without a profiler. Wrapping costs ~1 us per mark."""
    import importlib

    marks: dict[str, list[list[float]]] = {}
    t0 = [0.0]
    saved = []
    for owner, name in MARKED:
        mod, cls = owner.rsplit(".", 1)
        klass = getattr(importlib.import_module(mod), cls)
        fn = getattr(klass, name)
        saved.append((klass, name, klass.__dict__.get(name)))  # None: inherited (restored by deleting)

        def wrapped(*a, _fn=fn, _name=f"{cls}.{name}", **k):
            enter = (time.perf_counter() - t0[0]) * 1e6
            try:
                return _fn(*a, **k)
            finally:
                marks.setdefault(_name, []).append([enter, (time.perf_counter() - t0[0]) * 1e6])
        setattr(klass, name, wrapped)
    try:
        for _ in range(n):
            args = prepare()
            torch.cuda.synchronize()
            t0[0] = time.perf_counter()
            call(args)
            marks.setdefault("call", []).append([0.0, (time.perf_counter() - t0[0]) * 1e6])
            torch.cuda.synchronize()
    finally:
        for klass, name, own in saved:
            if own is None:
                delattr(klass, name)
            else:
                setattr(klass, name, own)
    return {k: [statistics.median(v[0] for v in vs), statistics.median(v[1] for v in vs)]
            for k, vs in sorted(marks.items(), key=lambda kv: statistics.median(v[0] for v in kv[1]))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--primitives-only", action="store_true", help="only the host cost per primitive")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("granite_host_timeline needs a CUDA GPU")
    result = {"primitives_us": primitive_costs(args.reps), "workloads": {}}
    print("host us per primitive:", {k: round(v, 1) for k, v in result["primitives_us"].items()})
    sl = default_slice()
    layer = build_layer(FastMambaLayer, sl, torch.device("cuda"), torch.bfloat16)
    hidden = sl.config.hidden_size
    with torch.no_grad():
        for w in load_workloads(default_workloads_path("cuda")):
            if args.primitives_only or w.purpose != "bench" or (w.kind == "prefill" and w.batch == 1):
                continue
            inputs = [make_inputs(w, hidden, "cuda", torch.bfloat16, rotation=r) for r in range(3)]
            prepare, call = timed_side(layer, w, inputs)
            row = latency_and_enqueue(prepare, call, args.calls)
            if w.kind == "decode":
                token, cache = prepare()
                row["pieces"] = decode_pieces(layer, cache, token, args.calls)
                row["latency_by_decode_io_us"] = attribute_ab(
                    layer, "decode_io", {"copy": "copy", "mapped": "mapped"}, prepare, call, args.calls)
            else:
                row["mask_check_us"] = mask_check_costs(inputs[0].mask, 50)
                row["latency_by_mask_check_us"] = attribute_ab(
                    layer, "_mask_facts", {"layer": layer._mask_facts,
                                           "eager mask_facts": ReferenceMambaLayer._mask_facts.__get__(layer)},
                    prepare, call, args.calls)
                row["latency_by_prefill_graphs_us"] = attribute_ab(
                    layer, "prefill_graphs", {"kernels": "kernels", "mapped": "mapped"}, prepare, call, args.calls)
                row["cpu_ops"] = cpu_op_table(prepare, call)
            row["gpu_gaps"] = gpu_gaps(prepare, call)
            row["host_marks_us"] = host_marks(prepare, call)
            result["workloads"][w.name] = row
            print(f"== {w.name}: latency {row['latency_us']:.1f} us, enqueue {row['enqueue_us']:.1f} us")
            for k in ("pieces", "mask_check_us", "latency_by_mask_check_us", "latency_by_prefill_graphs_us",
                      "latency_by_decode_io_us"):
                if k in row:
                    print(f"   {k}: {json.dumps(row[k])}")
            for c in row["gpu_gaps"][-1:]:
                print(f"   profiled call: first GPU work {c['first_gpu_after_us']:.1f} us after the call's start "
                      f"({c['first']}), host {c['host_call_us']:.1f} us, GPU busy {c['gpu_busy_us']:.1f} us, "
                      f"span {c['span_us']:.1f} us; largest gaps:")
                for g in c["gaps"][:6]:
                    print(f"      {g['us']:7.1f} us  after {g['after']}  before {g['before']}")
            print("   host marks (us after the call's start: enter, leave):",
                  ", ".join(f"{k} {a:.0f}-{b:.0f}" for k, (a, b) in row["host_marks_us"].items()))
            for r in row.get("cpu_ops", [])[:18]:
                print(f"   {r['op']:<40} calls {r['calls']:5.1f}  self {r['cpu_self_us']:8.1f} us  "
                      f"total {r['cpu_total_us']:8.1f} us")
    if args.out:
        meta = run_metadata(None, "cuda")
        with open(args.out, "w") as f:
            json.dump({**meta, **result}, f, indent=1)


if __name__ == "__main__":
    main()
