"""Where a single Granite layer call's time goes beyond its kernels' GPU time (GPU machine), for every bench
workload (B = 1 prefills included, which ``granite_host_timeline.py`` leaves out).

``granite_profile.py`` sums kernel times over calls queued back to back; the harness times one call at a time,
from an event on an idle GPU. Per workload this prints the harness call time (``event_us``, CUDA events, median
of ``--calls``) beside ``granite_host_timeline.gpu_gaps`` of ``--calls`` profiled calls (one at a time, synchronised
between): the host's delay to the first GPU work (``lead_us``, inflated by the profiler), the GPU busy time and the
idle time between the call's GPU activities (``gaps_us``), medians, with the largest gaps of the median call named
by the activities on either side; and ``host_marks`` (when the host enters and leaves each step of the forward,
no profiler). ``--set``: layer attributes to set first, for A/Bs of a switch. ``--toggle JSON``: also time, in the
same process on the same layer (its captured graphs), calls with these attributes set against calls without, in
alternating blocks of 10 (``toggle_us``: median event time of each side). ``--cprofile N``: also run N calls under
cProfile and print the functions with the most own host time (``cprofile_top``: us per call).
Usage (CUDA): PYTHONPATH=src python bench/granite_call_gap.py [--calls 20] [--workloads a,b] [--set JSON]
    [--toggle JSON] [--cprofile N] [--out F.json]
"""
import argparse
import json
import statistics

import torch

from granite_host_timeline import gpu_gaps, host_marks
from granite_profile import add_layer_run_args, bench_workloads, configured_layer
from ssmkit.granite import FastMambaLayer
from ssmkit.harness.granite_bench import timed_side
from ssmkit.harness.granite_run import default_slice, make_inputs
from ssmkit.harness.report import run_metadata
from ssmkit.harness.timing import time_call


def harness_side(layer, w, hidden_size: int, device):
    """(prepare, call) of ``layer`` on ``w`` as the harness times it, rotating over 3 input sets."""
    input_sets = [make_inputs(w, hidden_size, device, torch.bfloat16, rotation=r) for r in range(3)]
    return timed_side(layer, w, input_sets)


def measure(layer, w, hidden_size: int, device, calls: int) -> dict:
    """Median event time and the medians of ``gpu_gaps`` over ``calls`` calls of ``layer`` on ``w`` (us)."""
    prepare, call = harness_side(layer, w, hidden_size, device)
    with torch.no_grad():
        event_us = statistics.median([time_call(prepare, call, device) * 1e3 for _ in range(calls + 5)][5:])
        per_call = gpu_gaps(prepare, call, n=calls, top=3)
        marks = host_marks(prepare, call, n=calls)
    for c in per_call:
        c["gaps_us"] = c["span_us"] - c["first_gpu_after_us"] - c["gpu_busy_us"]
    median_call = sorted(per_call, key=lambda c: c["span_us"])[len(per_call) // 2]
    return {"event_us": event_us,
            **{k: statistics.median(c[src] for c in per_call) for k, src in
               (("lead_us", "first_gpu_after_us"), ("busy_us", "gpu_busy_us"), ("gaps_us", "gaps_us"),
                ("host_us", "host_call_us"))},
            "largest_gaps_median_call": median_call["gaps"], "host_marks_us": marks}


def toggled_event_us(layer, w, hidden_size: int, device, attrs: dict, blocks: int) -> dict[str, float]:
    """Median event time (us) of ``w``'s calls with the layer as it is ("as set") and with ``attrs`` set
    ("toggled"), in ``blocks`` alternating blocks of 10 calls each (the first call of a block not counted)."""
    prepare, call = harness_side(layer, w, hidden_size, device)
    before = {k: getattr(layer, k) for k in attrs}
    times = {"as set": [], "toggled": []}
    with torch.no_grad():
        for b in range(2 * blocks):
            side = "toggled" if b % 2 else "as set"
            for k, v in (attrs if b % 2 else before).items():
                setattr(layer, k, v)
            times[side] += [time_call(prepare, call, device) * 1e3 for _ in range(11)][1:]
    for k, v in before.items():
        setattr(layer, k, v)
    return {side: statistics.median(t) for side, t in times.items()}


def cprofile_top(layer, w, hidden_size: int, device, calls: int, top: int = 25) -> list[dict]:
    """The ``top`` functions by own host time over ``calls`` calls of ``w`` under cProfile (us per call; the
    profiler's own overhead inflates every entry, so compare them with one another, not with the event time)."""
    import cProfile
    import pstats

    prepare, call = harness_side(layer, w, hidden_size, device)
    prof = cProfile.Profile()
    with torch.no_grad():
        for _ in range(5):
            call(prepare())
        torch.cuda.synchronize()
        for _ in range(calls):
            args = prepare()
            torch.cuda.synchronize()
            prof.enable()
            call(args)
            prof.disable()
            torch.cuda.synchronize()
    stats = pstats.Stats(prof).stats
    rows = [{"function": f"{path.rsplit('/', 1)[-1]}:{line}({name})", "calls": n / calls, "own_us": tt / calls * 1e6,
             "cumulative_us": ct / calls * 1e6} for (path, line, name), (_, n, tt, ct, _) in stats.items()]
    return sorted(rows, key=lambda r: -r["own_us"])[:top]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_layer_run_args(ap)
    ap.add_argument("--toggle", type=json.loads, default=None, help="layer attributes of the same-process A/B side")
    ap.add_argument("--cprofile", type=int, default=0, help="calls to run under cProfile (0: none)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("granite_call_gap needs a CUDA GPU")
    device = torch.device("cuda")
    sl = default_slice()
    layer = configured_layer(FastMambaLayer, sl, device, args.set)
    rows = []
    for w in bench_workloads(args.workloads):
        row = {"workload": w.name, **measure(layer, w, sl.config.hidden_size, device, args.calls)}
        rows.append(row)
        gaps = "; ".join(f"{g['us']:.1f} after {g['after'][:24]} before {g['before'][:24]}"
                         for g in row["largest_gaps_median_call"])
        print(f"{w.name:18s} event {row['event_us']:7.1f}  lead {row['lead_us']:6.1f}  busy {row['busy_us']:7.1f}  "
              f"gaps {row['gaps_us']:6.1f}  host {row['host_us']:6.1f} us | {gaps}")
        print("   host marks (us after the call's start: enter-leave):",
              ", ".join(f"{k} {a:.0f}-{b:.0f}" for k, (a, b) in row["host_marks_us"].items()), flush=True)
        if args.toggle:
            row["toggle_us"] = toggled_event_us(layer, w, sl.config.hidden_size, device, args.toggle,
                                                max(1, args.calls // 10))
            print(f"   toggle {json.dumps(args.toggle)}: " +
                  ", ".join(f"{k} {v:.1f} us" for k, v in row["toggle_us"].items()), flush=True)
        if args.cprofile:
            row["cprofile_top"] = cprofile_top(layer, w, sl.config.hidden_size, device, args.cprofile)
            for r in row["cprofile_top"]:
                print(f"   {r['own_us']:7.1f} us own {r['cumulative_us']:8.1f} cum {r['calls']:5.1f}x  {r['function']}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({**run_metadata(None, device), "attributes": args.set, "toggle": args.toggle, "rows": rows}, f,
                      indent=1)
        print(f"json: {args.out}")


if __name__ == "__main__":
    main()
