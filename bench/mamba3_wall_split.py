"""Where a Mamba-3 public call's wall time goes beyond its GPU time (graph path, one process, CUDA only).

Per case (cases.json, 3 rotating input sets, the public entry through its graph), medians over CALLS calls, ms:
- ``queued``: CUDA-event time per call of calls issued back to back (the GPU's time per call);
- ``wall``: host timer around the call + ``torch.cuda.synchronize()`` (what ``mamba3_bench.py`` reports);
- ``span``: CUDA events recorded just before and just after the call on an idle GPU (the start event runs at once,
  so the span holds the host's time up to the graph's launch, the launch latency and the GPU's work);
- ``pre``, ``replay``, ``post``: host time from the call's start to ``MappedIO.replay_addresses``, inside it (the
  post of the addresses and ``graph.replay()``), and after it (the next call's results allocated) until the call
  returns;
- floors: ``sync`` (host timer around ``torch.cuda.synchronize()`` on an idle GPU) and ``tiny`` (one one-element
  kernel + synchronize);
- host pieces (us, mean over PIECE_REPS calls each, the first case): the entry's steps before the replay one by one
  (``_validate`` on a remembered layout, ``kernels_apply``, ``graph_applies``, the 17 ``postable``, the graph's
  ``ReplayStream.same``; the fast path's ``addresses_if_layout`` instead), ``MappedIO.post`` (the 33 addresses:
  their ``data_ptr()`` taken and stored) and ``post_addresses`` (stored only), the host time of ``graph.replay()``
  alone, and the 16 result allocations made after each replay.
So ``span - queued`` is the host lead plus the launch latency, ``wall - span`` the synchronize's return.
Usage: PYTHONPATH=src python bench/mamba3_wall_split.py --out DIR [--cases c1_four_mixed,...] [--scales 1,2,4]
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mamba3_bench import ROTATE, interleaved_queued_ms, named_cases  # noqa: E402

from ssmkit.harness.report import run_metadata, write_json  # noqa: E402
from ssmkit.kernels.common.mapped_io import MappedIO  # noqa: E402
from ssmkit.mamba3.inputs import make_inputs  # noqa: E402
from ssmkit.mamba3 import graph as graph_module  # noqa: E402
from ssmkit.mamba3 import op as op_module  # noqa: E402
from ssmkit.mamba3.op import mamba3_siso_varlen_joint_states_full_vjp  # noqa: E402
from ssmkit.mamba3.shapes import COTANGENT_NAMES, INPUT_NAMES  # noqa: E402

CALLS, PIECE_REPS = 60, 2000
_MARKS: list[float] = []


def install_marks() -> None:
    """Wrap MappedIO.replay_addresses (once per process) so that it records the host clock in _MARKS when it is
    entered and when it returns (``split_call`` needs it)."""
    original = MappedIO.replay_addresses
    if getattr(original, "_marked", False):
        return

    def replay(self, graph, src, dsts):
        _MARKS.append(time.perf_counter())
        original(self, graph, src, dsts)
        _MARKS.append(time.perf_counter())
    replay._marked = True
    MappedIO.replay_addresses = replay


def split_call(fn, arg_sets) -> dict:
    """Medians (ms) of queued, wall, span, pre / replay / post for fn over CALLS calls (after a warm-up), and lead =
    span - queued; needs ``install_marks``."""
    for args in arg_sets * 2:  # (the second call of a key captures its graph)
        fn(args)
    torch.cuda.synchronize()
    got = {k: [] for k in ("wall", "span", "pre", "replay", "post")}
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for i in range(CALLS):
        args = arg_sets[i % len(arg_sets)]
        torch.cuda.synchronize()
        _MARKS.clear()
        t0 = time.perf_counter()
        fn(args)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        if len(_MARKS) != 2:
            raise RuntimeError(f"expected one MappedIO.replay_addresses per call, saw {len(_MARKS) // 2}")
        got["pre"].append((_MARKS[0] - t0) * 1e3)
        got["replay"].append((_MARKS[1] - _MARKS[0]) * 1e3)
        got["post"].append((t1 - _MARKS[1]) * 1e3)
        got["wall"].append((t2 - t0) * 1e3)
        torch.cuda.synchronize()
        start.record()
        fn(args)
        end.record()
        end.synchronize()
        got["span"].append(start.elapsed_time(end))
    row = {k: statistics.median(v) for k, v in got.items()}
    row["queued"] = interleaved_queued_ms([fn], arg_sets, rounds=3)[0][0]
    row["lead"] = row["span"] - row["queued"]
    return row


def floors(device) -> dict:
    """Host timer medians (ms): synchronize on an idle GPU; a one-element kernel + synchronize."""
    x = torch.ones(1, device=device)
    sync, tiny = [], []
    for _ in range(CALLS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        torch.cuda.synchronize()
        sync.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        x.add_(1.0)
        torch.cuda.synchronize()
        tiny.append((time.perf_counter() - t0) * 1e3)
    return {"sync": statistics.median(sync), "tiny": statistics.median(tiny)}


def _mean_us(fn, reps: int = PIECE_REPS) -> float:
    """Mean host time of fn() in microseconds over ``reps`` calls (after a few warm-up calls)."""
    for _ in range(10):
        fn()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps * 1e6


def host_pieces(args: dict) -> dict:
    """Host us of each step of a graph-path call on ``args`` (its graph already captured; see the docstring)."""
    inputs, cotangents = tuple(args[n] for n in INPUT_NAMES), tuple(args[n] for n in COTANGENT_NAMES)
    flat = (*inputs, *cotangents)
    q, cu = inputs[0], inputs[11]
    (graph,) = [g for g in graph_module._GRAPHS.values() if g.static_args[0].shape == q.shape]
    posted = tuple(graph_module.postable(x) for x in flat)
    results = tuple(torch.empty_like(x) for x in graph.static_results)
    io = graph.io
    torch.cuda.synchronize()

    addresses, result_addresses = [x.data_ptr() for x in posted], [r.data_ptr() for r in results]

    def post():
        io._ack[0] = io.seq  # (as if the previous replay had read the table: none runs, the device is idle)
        io.post(posted, results)

    def post_addresses():
        io._ack[0] = io.seq
        io.post_addresses(addresses, result_addresses)

    def replay_host_us():
        t0 = time.perf_counter()
        graph.graph.replay()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        return (t1 - t0) * 1e6

    pieces = {
        "validate": _mean_us(lambda: op_module._validate(inputs, cotangents, None)),
        "kernels_apply": _mean_us(lambda: op_module.kernels_apply(q.device)),
        "graph_applies": _mean_us(lambda: graph_module.graph_applies(None, q, cu)),
        "postable_17": _mean_us(lambda: tuple(graph_module.postable(x) for x in flat)),
        "stream_same": _mean_us(graph._stream.same),
        "addresses_if_layout": _mean_us(lambda: graph.addresses_if_layout(flat)),
        "post_33": _mean_us(post),
        "post_addresses": _mean_us(post_addresses),
        "allocate_16": _mean_us(lambda: tuple(torch.empty_like(x) for x in graph.static_results), 200),
    }
    io._ack[0] = io.seq
    pieces["graph.replay()"] = statistics.median(replay_host_us() for _ in range(200))
    return pieces


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--cases", default="c1_four_mixed,c5_three_even,c8_small_three")
    ap.add_argument("--scales", default="1", help="comma-separated scales of the cases' sequence lengths")
    args = ap.parse_args()
    device = torch.device("cuda")
    install_marks()
    cases = named_cases(args.cases, args.scales)
    entry = lambda a: mamba3_siso_varlen_joint_states_full_vjp(**a, graph=True)  # noqa: E731
    rows = []
    columns = ("queued", "span", "wall", "pre", "replay", "post", "lead")
    print(f"{'case':22s} {'T':>5s} " + " ".join(f"{k:>7s}" for k in columns), flush=True)
    with torch.no_grad():
        for case in cases:
            sets = [make_inputs(case["seqlens"], case["seed"] + r, device=device) for r in range(ROTATE)]
            row = dict(case=case["name"], T=sum(case["seqlens"]), **split_call(entry, sets))
            rows.append(row)
            print(f"{case['name']:22s} {row['T']:5d} " + " ".join(f"{row[k]:7.4f}" for k in columns), flush=True)
    low = floors(device)
    print(f"floors: synchronize {low['sync']:.4f} ms, one tiny kernel + synchronize {low['tiny']:.4f} ms")
    try:  # (a bench-only probe of private pieces: if one has changed, the rows above still get written)
        with torch.no_grad():
            pieces = host_pieces(make_inputs(cases[0]["seqlens"], cases[0]["seed"], device=device))
        print(f"host pieces ({cases[0]['name']}, us): " + ", ".join(f"{k} {v:.1f}" for k, v in pieces.items()))
    except Exception as exc:  # noqa: BLE001
        pieces = {"error": repr(exc)}
        print(f"host pieces failed: {exc!r}")
    path = args.out / "mamba3_wall_split.json"
    write_json(path, dict(run_metadata(None, device), rows=rows, floors=low, calls=CALLS, host_pieces_us=pieces))
    print("json:", path)


if __name__ == "__main__":
    main()
