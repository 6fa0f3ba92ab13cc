"""Same-process A/B of the Mamba-3 kernels: the working tree's fwd.py + bwd.py against baseline copies of both.

Each baseline directory holds a fwd.py and a bwd.py from another commit or variant (e.g. ``git show
REF:src/ssmkit/kernels/mamba3/bwd.py``), loaded as their own modules, so every version runs in one process on the
same inputs (``--baseline`` may be given several times; the sides are named after the directories, the working
tree "new"). Per case (cases.json, 3 rotating input sets): the 16 results of each side (forward outputs, then the
11 gradients) compared with the first side's (norm-relative difference; 0 = bit-identical), then the full call
(forward + backward kernels, no validation) timed with the sides alternating: host wall per call (median) and the
GPU kernel time per call from torch.profiler, and for the first case the per-kernel split.
Usage (CUDA): PYTHONPATH=src python bench/mamba3_ab.py --baseline DIR [--baseline DIR2] --out DIR [--cases c1,...]
       PYTHONPATH=src python bench/mamba3_ab.py --graph --out DIR [--cases ...] [--scales 1,2,4]
``--graph``: instead, the public entry with validation, launching directly (graph=False, "baseline") against its
captured-graph path (graph=True, "new"; ssmkit.mamba3.graph), at each scale of the sequence lengths.
``--graph-streams``: the graph path with every launch on one stream ("baseline") against its forked side streams
("new"; ssmkit.mamba3.graph.CONCURRENT_STREAMS).
``--stream-priorities JSON``: the graph path at its default stream priorities ("baseline") against each triple of the
list (capture stream, side stream 1, side stream 2), e.g. '[[0, -1, 0]]' (ssmkit.mamba3.graph.STREAM_PRIORITIES;
sides named after the triples).
``--configs JSON``: the graph path at the default launch configs ("baseline") against each dict of the list, fields
of Mamba3BwdConfig, or of Mamba3FwdConfig prefixed "fwd.", e.g. '[{"dstate_scan": true}, {"fwd.scan_warps": 8}]'
(sides named after their fields; a graph is captured per config).
``--package DIR`` (repeatable): whole code versions, each a renamed package copy made by bench/ab_package.py (e.g.
bench/_ab/pkgs/ssmkit_s13), its public entry through its graph (graph=True) against the working tree's.
Every mode also reports ``queued_ms`` (`mamba3_bench.interleaved_queued_ms`): CUDA-event time of calls issued back to
back without a host sync, per call (the GPU's time per call wherever the host keeps ahead of it, as with one graph
replay per call); the median of QUEUED_ROUNDS rounds, the sides' order reversed every other round (``queued_ms_rounds``:
each round's).
Graph sides: the process's capture limit is lifted and each case's graphs dropped after it; a case in which a graph
side did not capture its graph stops the run (the rows so far written, that one marked ``graph_sides_captured``).
"""
import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mamba3_bench import ROTATE, gpu_kernel_split, gpu_ms, interleaved_queued_ms, named_cases  # noqa: E402

from ssmkit.harness.report import run_metadata, write_json  # noqa: E402
from ssmkit.kernels.mamba3 import bwd as new_bwd  # noqa: E402
from ssmkit.kernels.mamba3 import fwd as new_fwd  # noqa: E402
from ssmkit.mamba3 import graph as graph_module  # noqa: E402
from ssmkit.mamba3.inputs import make_inputs  # noqa: E402
from ssmkit.mamba3.op import mamba3_siso_varlen_joint_states_full_vjp  # noqa: E402
from ssmkit.mamba3.shapes import COTANGENT_NAMES, INPUT_NAMES, RESULT_NAMES  # noqa: E402

CALLS = 40


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_baseline(base: Path, i: int):
    """(fwd, bwd) modules of a baseline directory; its bwd.py imports the baseline's fwd.py (its
    ``ssmkit.kernels.mamba3.fwd`` imports resolve to it while it loads), not the working tree's."""
    fwd = load(base / "fwd.py", f"ab_baseline{i}_fwd")
    name = "ssmkit.kernels.mamba3.fwd"
    working = sys.modules[name]
    sys.modules[name] = fwd
    try:
        bwd = load(base / "bwd.py", f"ab_baseline{i}_bwd")
    finally:
        sys.modules[name] = working
    return fwd, bwd


def full_call(fwd_mod, bwd_mod):
    """args dict -> the 16 results, through the given modules' kernel entries."""
    def run(args):
        inputs = [args[n] for n in INPUT_NAMES]
        *outputs, saved = fwd_mod.mamba3_siso_fwd(*inputs)
        return (*outputs, *bwd_mod.mamba3_siso_bwd(*inputs, saved, *[args[n] for n in COTANGENT_NAMES]))
    return run


def launch_configs(fields: dict) -> dict:
    """``--configs`` fields -> the public entry's fwd_config and bwd_config ("fwd."-prefixed fields the forward's;
    an unknown field raises)."""
    fwd = {k.removeprefix("fwd."): v for k, v in fields.items() if k.startswith("fwd.")}
    bwd = {k: v for k, v in fields.items() if not k.startswith("fwd.")}
    defaults = {"fwd_config": new_fwd.DEFAULT_FWD_CONFIG, "bwd_config": new_bwd.DEFAULT_BWD_CONFIG}
    for (key, config), given in zip(defaults.items(), (fwd, bwd)):
        unknown = sorted(set(given) - set(config._fields))
        if unknown:
            raise SystemExit(f"--configs: {type(config).__name__} has no field(s) {unknown}")
        defaults[key] = config._replace(**given)
    return defaults


def entry_call(graph: bool, concurrent: bool = True, priorities: tuple | None = None, configs: dict | None = None):
    """args dict -> the 16 results of the public entry, launching directly or through its graph (with or without
    its side streams, at these stream priorities (None: the default ones), at these launch configs (``--configs``
    fields; None: the defaults))."""
    default = graph_module.STREAM_PRIORITIES
    config_args = launch_configs(configs or {})

    def run(args):
        graph_module.CONCURRENT_STREAMS = concurrent
        graph_module.STREAM_PRIORITIES = default if priorities is None else tuple(priorities)
        try:
            return mamba3_siso_varlen_joint_states_full_vjp(**args, graph=graph, **config_args)
        finally:
            graph_module.CONCURRENT_STREAMS, graph_module.STREAM_PRIORITIES = True, default
    return run


def package_call(pkg: Path):
    """args dict -> the 16 results of a renamed package copy's public entry through its graph."""
    if str(pkg.parent) not in sys.path:
        sys.path.insert(0, str(pkg.parent))
    entry = importlib.import_module(f"{pkg.name}.mamba3.op").mamba3_siso_varlen_joint_states_full_vjp
    return lambda args: entry(**args, graph=True)


def graph_modules(packages) -> list:
    """The graph modules the sides use that count their captures: the working tree's and each ``--package`` copy's
    (its own graph cache; a copy older than the capture count is left out)."""
    mods = [graph_module] + [importlib.import_module(f"{pkg.name}.mamba3.graph") for pkg in packages or []]
    return [m for m in mods if hasattr(m, "_CAPTURES")]


def captures(modules) -> int:
    """Graphs captured so far in this process by the given graph modules."""
    return sum(m._CAPTURES[0] for m in modules)


def write_rows(out: Path, device, rows: list) -> Path:
    """Write the run's JSON (metadata and the rows so far) to out/mamba3_ab.json; returns its path."""
    path = out / "mamba3_ab.json"
    write_json(path, dict(run_metadata(None, device), rows=rows))
    return path


def interleaved_wall_ms(fns, arg_sets):
    """Median host wall ms per call of each fn, calls alternating between them (warm-up first)."""
    for fn in fns:
        for args in arg_sets:
            fn(args)
    torch.cuda.synchronize()
    times = [[] for _ in fns]
    for i in range(CALLS):
        for j, fn in enumerate(fns):
            start = time.perf_counter()
            fn(arg_sets[i % len(arg_sets)])
            torch.cuda.synchronize()
            times[j].append((time.perf_counter() - start) * 1e3)
    return [statistics.median(t) for t in times]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", type=Path, action="append")
    ap.add_argument("--graph", action="store_true")
    ap.add_argument("--graph-streams", action="store_true")
    ap.add_argument("--package", type=Path, action="append")
    ap.add_argument("--stream-priorities", type=json.loads, default=None)
    ap.add_argument("--configs", type=json.loads, default=None)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--cases", default="")
    ap.add_argument("--scales", default="1")
    args = ap.parse_args()
    device = torch.device("cuda")
    modes = (args.baseline, args.package, args.graph, args.graph_streams, args.stream_priorities, args.configs)
    if sum(map(bool, modes)) > 1:
        ap.error("--baseline, --package, --graph, --graph-streams, --stream-priorities and --configs are exclusive")
    if args.configs:
        sides = {"baseline": entry_call(True)}
        sides.update({",".join(f"{k}={v}" for k, v in c.items()): entry_call(True, configs=c) for c in args.configs})
    elif args.stream_priorities:
        sides = {"baseline": entry_call(True)}
        sides.update({"prio" + ",".join(map(str, p)): entry_call(True, priorities=p) for p in args.stream_priorities})
    elif args.graph:
        sides = {"baseline": entry_call(False), "new": entry_call(True)}
    elif args.graph_streams:
        sides = {"baseline": entry_call(True, concurrent=False), "new": entry_call(True)}
    elif args.package:
        sides = {pkg.name: package_call(pkg) for pkg in args.package}
        sides["new"] = entry_call(True)
    else:
        if args.baseline is None:
            ap.error("one of --baseline DIR, --package DIR, --graph, --graph-streams, --stream-priorities or "
                     "--configs is needed")
        sides = {}
        for i, base in enumerate(args.baseline):
            sides[base.name if base.name not in sides else f"{base.name}{i}"] = full_call(*load_baseline(base, i))
        sides["new"] = full_call(new_fwd, new_bwd)
    cases = named_cases(args.cases, args.scales)
    rows = []
    # every graph side captures one graph per case: lift the process's capture limit (ssmkit.mamba3.graph.MAX_CAPTURES,
    # 32), past which a side launches directly (~0.7 ms queued per call, host-bound), and drop each case's graphs
    # after it (memory). Session 40's run 3 (6 sides x 8 cases) read its last cases so before this.
    modules = graph_modules(args.package)
    graph_sides = (0 if args.baseline else 1 if args.graph else len(modules) if args.package else len(sides))
    for m in modules:
        m.MAX_CAPTURES = max(m.MAX_CAPTURES, 2 * graph_sides * len(cases))
    with torch.no_grad():
        for i, case in enumerate(cases):
            before = captures(modules)
            sets = [make_inputs(case["seqlens"], case["seed"] + r, device=device) for r in range(ROTATE)]
            walls = interleaved_wall_ms(list(sides.values()), sets)  # (warms up: a graph side replays below)
            res = {name: fn(sets[0]) for name, fn in sides.items()}
            first = next(iter(res.values()))
            diffs = {name: {n: ((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-30)).item()
                            for n, a, b in zip(RESULT_NAMES, r, first)} for name, r in list(res.items())[1:]}
            gpus = [gpu_ms(fn, sets) for fn in sides.values()]
            queued, queued_rounds = interleaved_queued_ms(list(sides.values()), sets)
            row = dict(case=case["name"], T=sum(case["seqlens"]), wall_ms=dict(zip(sides, walls)),
                       gpu_ms=dict(zip(sides, gpus)), queued_ms=dict(zip(sides, queued)),
                       queued_ms_rounds=dict(zip(sides, queued_rounds)), vs_first_side=diffs)
            if i == 0:
                row["kernels_ms"] = {name: gpu_kernel_split(fn, sets[0]) for name, fn in sides.items()}
            rows.append(row)
            captured = captures(modules) - before
            if captured != graph_sides:  # (the rows so far are written, this one marked, then the run stops)
                row["graph_sides_captured"] = captured
                write_rows(args.out, device, rows)
                raise SystemExit(f"{case['name']}: {captured} graphs captured, expected one per graph side "
                                 f"({graph_sides}): a side did not run through its graph")
            for m in modules:
                m.clear_graphs()
            worst = max(max(d.values()) for d in diffs.values())
            print(f"{case['name']:24s} wall " + " -> ".join(f"{w:.3f}" for w in walls)
                  + " ms  GPU " + " -> ".join(f"{g:.3f}" for g in gpus)
                  + " ms  queued " + " -> ".join(f"{q:.3f}" for q in queued)
                  + f" ms ({' -> '.join(sides)})  max rel diff {worst:.2e}", flush=True)
            if "kernels_ms" in row:
                for name, split in row["kernels_ms"].items():
                    print(f"   {name}: " + ", ".join(f"{k[:28]} {v:.3f}" for k, v in sorted(
                        split.items(), key=lambda kv: -kv[1])), flush=True)
    print("json:", write_rows(args.out, device, rows))


if __name__ == "__main__":
    main()
