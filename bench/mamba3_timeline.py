"""Where one Mamba-3 full-VJP call's GPU time goes, kernel by kernel on its streams (CUDA, a timeline, not sums).

The kernel sums of ``mamba3_ab.py`` / ``mamba3_bench.py`` count a kernel's whole duration even where it shares the GPU
with kernels on the graph's side streams, so they do not say which kernels the call waits for. This profiles calls
of the public entry (its default: one graph replay per call), each alone on an idle GPU (synchronised before and
after), and prints, for the call whose span is the median, every kernel's stream, start and end (us from the
call's first kernel), duration, and the SMs' idle gaps: intervals inside the span where no kernel runs at all; and
each kernel's median duration over all the calls ("med": a kernel launched twice per call counted per launch).
Usage (CUDA): PYTHONPATH=src python bench/mamba3_timeline.py --out DIR [--cases c1_four_mixed,...] [--calls 7]
       [--config JSON] (launch config fields as bench/mamba3_ab.py --configs takes one of them, e.g.
       '{"side_maxnreg": 0}') [--one-stream] (every launch of the graph on one stream,
       ssmkit.mamba3.graph.CONCURRENT_STREAMS False: each kernel's duration with nothing beside it)
JSON (command, commit, GPU, versions; per case every profiled call's kernels) goes to DIR/mamba3_timeline.json.
"""
import argparse
import itertools
import json
import statistics
import sys
import tempfile
from collections import Counter
from importlib import resources
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mamba3_ab import launch_configs  # noqa: E402

from ssmkit.harness.report import run_metadata, write_json  # noqa: E402
from ssmkit.mamba3 import graph as graph_module  # noqa: E402
from ssmkit.mamba3.inputs import make_inputs  # noqa: E402
from ssmkit.mamba3.op import mamba3_siso_varlen_joint_states_full_vjp  # noqa: E402

WARMUP = 4


def kernels_of_trace(path: Path) -> list[dict]:
    """The CUDA kernels of a torch.profiler chrome trace: name, stream, ts and dur (us), in start order."""
    events = json.loads(path.read_text())["traceEvents"]
    found = [{"name": e["name"], "stream": e.get("args", {}).get("stream"), "ts": float(e["ts"]),
              "dur": float(e["dur"])} for e in events if e.get("cat") == "kernel" and "dur" in e]
    return sorted(found, key=lambda k: k["ts"])


def split_calls(kernels: list[dict], calls: int) -> list[list[dict]]:
    """Kernels of ``calls`` calls made one after another with an idle GPU between them, grouped per call (a gap
    longer than any gap inside a call separates two calls: the ``calls - 1`` longest gaps). Raises SystemExit when
    the groups do not all hold the same kernels (a kernel between the calls, or calls that did not split)."""
    ends = list(itertools.accumulate((k["ts"] + k["dur"] for k in kernels), max))  # (the latest end so far)
    gaps = sorted(range(1, len(kernels)), key=lambda i: kernels[i]["ts"] - ends[i - 1])
    cuts = sorted(gaps[-(calls - 1):]) if calls > 1 else []
    groups, start = [], 0
    for cut in cuts + [len(kernels)]:
        groups.append(kernels[start:cut])
        start = cut
    names = {tuple(sorted(k["name"] for k in g)) for g in groups}
    if len(groups) != calls or len(names) != 1:
        raise SystemExit(f"mamba3_timeline: the trace did not split into {calls} calls of the same kernels "
                         f"(kernels per group: {[len(g) for g in groups]})")
    return groups


def relative(call: list[dict]) -> list[dict]:
    """One call's kernels with start / end in us from its first kernel's start."""
    t0 = call[0]["ts"]
    return [{"name": k["name"], "stream": k["stream"], "start": k["ts"] - t0, "end": k["ts"] - t0 + k["dur"],
             "dur": k["dur"]} for k in call]


def idle_gaps(call: list[dict], at_least: float = 0.5) -> list[tuple[float, float]]:
    """(start, end) of the intervals inside the call's span where no kernel runs, at least ``at_least`` us long."""
    gaps, covered = [], 0.0
    for k in sorted(call, key=lambda k: k["start"]):
        if k["start"] - covered >= at_least:
            gaps.append((covered, k["start"]))
        covered = max(covered, k["end"])
    return gaps


def profile_case(args: dict, calls: int, configs: dict) -> list[list[dict]]:
    from torch.profiler import ProfilerActivity, profile

    for _ in range(WARMUP):
        mamba3_siso_varlen_joint_states_full_vjp(**args, **configs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            mamba3_siso_varlen_joint_states_full_vjp(**args, **configs)
            torch.cuda.synchronize()
            torch.cuda._sleep(2_000_000)  # (an idle stretch between calls, so that the calls split cleanly)
            torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(trace))
        kernels = [k for k in kernels_of_trace(trace) if "spin_kernel" not in k["name"]]  # (torch.cuda._sleep)
    return [relative(c) for c in split_calls(kernels, calls)]


def launches(call: list[dict]) -> list[str]:
    """A key per kernel of the call: its name, and "#n" for the n-th (from 0) later launch of the same name."""
    seen = Counter()
    keys = []
    for k in call:
        keys.append(k["name"] + (f"#{seen[k['name']]}" if seen[k["name"]] else ""))
        seen[k["name"]] += 1
    return keys


def kernel_medians(calls: list[list[dict]]) -> dict[str, float]:
    """Each launch's median duration (us) over the calls, by ``launches`` key."""
    durations = {}
    for call in calls:
        for key, k in zip(launches(call), call):
            durations.setdefault(key, []).append(k["dur"])
    return {key: statistics.median(d) for key, d in durations.items()}


def table(call: list[dict], medians: dict[str, float]) -> str:
    short = {s: i for i, s in enumerate(sorted({k["stream"] for k in call}, key=str))}
    lines = [f"{'kernel':40s} {'stream':>6s} {'start':>8s} {'end':>8s} {'dur':>7s} {'med':>7s}"]
    for key, k in zip(launches(call), call):
        lines.append(f"{k['name'][:40]:40s} {short[k['stream']]:>6d} {k['start']:8.1f} {k['end']:8.1f} "
                     f"{k['dur']:7.1f} {medians[key]:7.1f}")
    span = max(k["end"] for k in call)
    gaps = idle_gaps(call)
    lines.append(f"span {span:.1f} us; no kernel running: {sum(b - a for a, b in gaps):.1f} us in {len(gaps)} gaps "
                 + ", ".join(f"{a:.1f}-{b:.1f}" for a, b in gaps[:8]))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cases", default="c1_four_mixed,c5_three_even,c8_small_three")
    ap.add_argument("--calls", type=int, default=7)
    ap.add_argument("--config", type=json.loads, default={})
    ap.add_argument("--one-stream", action="store_true")
    opts = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("mamba3_timeline.py needs CUDA")
    graph_module.CONCURRENT_STREAMS = not opts.one_stream  # (part of a graph's key: a capture of its own)
    cases = json.loads(resources.files("ssmkit.mamba3").joinpath("cases.json").read_text())
    wanted = opts.cases.split(",")
    report = dict(run_metadata(None, "cuda"), config=opts.config, one_stream=opts.one_stream, cases={})
    configs = launch_configs(opts.config)
    for case in [c for c in cases if c["name"] in wanted]:
        args = make_inputs(case["seqlens"], case["seed"], device="cuda")
        calls = profile_case(args, opts.calls, configs)
        spans = [max(k["end"] for k in c) for c in calls]
        median = calls[spans.index(sorted(spans)[len(spans) // 2])]
        medians = kernel_medians(calls)
        report["cases"][case["name"]] = {"spans_us": spans, "median_span_us": statistics.median(spans),
                                         "kernel_median_us": medians, "calls": calls}
        print(f"== {case['name']} (T {sum(case['seqlens'])}): spans {', '.join(f'{s:.1f}' for s in spans)} us")
        print(table(median, medians), flush=True)
        write_json(Path(opts.out) / "mamba3_timeline.json", report)


if __name__ == "__main__":
    main()
