"""Where `mamba3_bench.py`'s wall time of the public call exceeds its queued time at long sequences (CUDA only).

Session 44 (H100): in the bench, wall - queued was 0.03 / 0.07 / 0.24 ms at c1 x1 / x2 / x4 (0.35 ms at x4 in
session 45's run 1), in a fresh process (`mamba3_wall_split.py --scales`) 0.03-0.05 at every scale. What the bench
process has and a fresh one lacks (its stages' tensors, its graph captured inside its stage loop, its profiler
windows) is told apart here, in one process, the public entry through its graph, per case and scale, in four phases
run in this order over every (case, scale):
- ``fresh``: ``mamba3_wall_split.split_call`` on the entry alone (its 3 input sets only);
- ``bench_capture``: the graphs dropped (``clear_graphs``), then the bench's stages built and each timed by
  ``wall_ms`` as the bench does (``timed_stages``: their saved tensors and gradients live through the split), so
  that the entry's graph is captured within the ``full`` stage's warm-up as in the bench; then the split;
- ``bench_state``: the same without dropping the graphs first. The phases run phase by phase over every (case,
  scale), and each ``bench_capture`` row drops the graphs, so here a case's graph is the one the last
  ``bench_capture`` row captured in its stage loop (that phase's last case and scale), or captured again in this
  phase's own stage loop (every other one);
- ``after_profiler``: the stages dropped, one profiled window of the full call (``gpu_ms``, as the bench runs after
  its wall times; torch.profiler cannot be undone in a process, hence last), then the split again.
After the split, each phase also times the entry the bench's way (``wall_ms_entry``: ``wall_ms``, a host timer around
call + synchronize, 30 calls after one warm-up call per input set); ``wall_ms_stage`` (the two bench phases only) is
the ``full`` stage's own ``wall_ms`` within the stage loop, the bench's wall column. (The bench's ``full`` stage passes
the default launch configs explicitly; the entry's defaults are the same objects, so its graph and key are the
entry's.)
Each row also holds the caching allocator's counters over its split (``memory_stats``: cudaMalloc and cudaFree calls,
allocation retries, syncs of all streams) and the memory reserved. ms columns as `mamba3_wall_split.py`: queued,
span, wall, pre / replay / post (host), lead = span - queued. The entry runs as the bench calls it (``graph=None``),
which takes its graph for every case up to the graph bound (``graph_applies``; a case above it is refused, since
the split times a graph replay); the process's capture limit is lifted (a graph dropped for size in one phase is
captured again in the next).
Usage: PYTHONPATH=src python bench/mamba3_wall_gap.py --out DIR [--cases c1_four_mixed] [--scales 1,2,4]
"""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mamba3_bench import ROTATE, gpu_ms, named_cases, timed_stages, wall_ms  # noqa: E402
from mamba3_wall_split import install_marks, split_call  # noqa: E402

from ssmkit.harness.report import run_metadata, write_json  # noqa: E402
from ssmkit.mamba3 import graph as graph_module  # noqa: E402
from ssmkit.mamba3.inputs import make_inputs  # noqa: E402
from ssmkit.mamba3.op import mamba3_siso_varlen_joint_states_full_vjp  # noqa: E402

PHASES = ("fresh", "bench_capture", "bench_state", "after_profiler")
COUNTERS = ("num_device_alloc", "num_device_free", "num_alloc_retries", "num_sync_all_streams")
COLUMNS = ("queued", "span", "wall", "pre", "replay", "post", "lead", "wall_ms_stage", "wall_ms_entry")


def entry(args: dict):
    return mamba3_siso_varlen_joint_states_full_vjp(**args)


def counted_split(arg_sets) -> dict:
    """``split_call`` of the entry with the allocator counters' increase over it and the memory reserved after it."""
    before = torch.cuda.memory_stats()
    row = split_call(entry, arg_sets)
    after = torch.cuda.memory_stats()
    row["allocator"] = {k: after.get(k, 0) - before.get(k, 0) for k in COUNTERS}
    row["reserved_mib"] = torch.cuda.memory_reserved() / 2**20
    return row


def phase_row(phase: str, case: dict, device) -> dict:
    sets = [make_inputs(case["seqlens"], case["seed"] + r, device=device) for r in range(ROTATE)]
    if not graph_module.graph_applies(None, sets[0]["q"], sets[0]["cu_seqlens"]):
        raise SystemExit(f"{case['name']}: above the graph bound (GRAPH_MAX_CALL_BYTES), so no replay to split")
    stage_full = float("nan")
    if phase in ("bench_capture", "bench_state"):
        if phase == "bench_capture":
            graph_module.clear_graphs()  # (the entry's graph then captured within the stage loop, as in the bench)
        stages = timed_stages(sets)
        stage_full = {name: wall_ms(fn, stage_sets) for name, (fn, stage_sets) in stages.items()}["full"]
    elif phase == "after_profiler":
        gpu_ms(entry, sets)
    row = counted_split(sets)
    row.update(wall_ms_stage=stage_full, wall_ms_entry=wall_ms(entry, sets))
    return dict(phase=phase, case=case["name"], T=sum(case["seqlens"]), **row)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--cases", default="c1_four_mixed")
    ap.add_argument("--scales", default="1,2,4", help="comma-separated scales of the cases' sequence lengths")
    args = ap.parse_args()
    device = torch.device("cuda")
    install_marks()
    graph_module.MAX_CAPTURES = 10 ** 6
    cases = named_cases(args.cases, args.scales)
    width = {k: max(7, len(k)) for k in COLUMNS}
    print(f"{'phase':15s} {'case':22s} {'T':>5s} " + " ".join(f"{k:>{width[k]}s}" for k in COLUMNS)
          + "  allocs frees retries syncs reserved_MiB", flush=True)
    rows = []
    for phase in PHASES:
        for case in cases:
            row = phase_row(phase, case, device)
            rows.append(row)
            cells = " ".join(f"{row[k]:{width[k]}.4f}" for k in COLUMNS)
            print(f"{phase:15s} {case['name']:22s} {row['T']:5d} " + cells
                  + "  " + " ".join(f"{row['allocator'][k]:6d}" for k in COUNTERS) + f" {row['reserved_mib']:9.0f}",
                  flush=True)
            write_json(args.out / "mamba3_wall_gap.json", dict(run_metadata(None, device), rows=rows))
    print("json:", args.out / "mamba3_wall_gap.json")


if __name__ == "__main__":
    main()
