"""FastMambaLayer on the GPU: correctness against the reference on the bench workloads, then timings vs issue 5.

Run on a CUDA machine from the repository root:

    python bench/granite_layer_bench.py --commit "$(git rev-parse HEAD)" --out bench/results/granite_decode_v1.json

Steps (all on the synthetic slice of the real config, seed 0, bf16):
1. Correctness: for each bench workload of ``src/ssmkit/granite/workloads.json`` plus a 4-step decode at B=8, the
   harness's ``verify_workload`` (fast vs bf16 reference vs fp32 truth, calibrated bounds, readout KL, cache in
   place, inputs untouched). Decode extras: the CUDA-graph step equals the eager step bit for bit, and an output
   is not overwritten by the next call (no aliasing of the graph's buffers).
2. Timing of full forward calls, the harness's way (``timed_side`` + ``median_time``: synchronise, CUDA events
   around one ``layer(...)`` call, so host launch overhead is included; 3 rotating input sets; decode restores a
   fresh cache in place before each call, outside the timed region). Fast and reference. For the fast layer also
   ``triton.testing.do_bench`` (median; it flushes L2 between calls, and its per-call events mostly hide host
   overhead: device time), and for decode a breakdown: replay of the captured graph alone, the two GEMMs alone,
   the two decode kernels alone (captured in a graph), and the host cost of the reference's argument checks.
3. ``--sweep`` (before step 2's timings): decode kernel 1's tile rows x warps at B = 1, 8, 64 (graph-captured
   kernels, do_bench median); the fastest per batch then replaces ``decode_launch_config`` for the layer timings
   (``tuned_launch_config`` in the JSON), so the layer numbers are those of the swept winners.
4. Decode latency pieces: full forward, ``_decode`` alone, graph replay alone (v2 of this script also timed the
   design then in the layer, a graph of the two kernels alone with eager cuBLAS around it, against the whole-step
   graph the layer now uses: bench/results/granite_decode_v2.json).
5. ``--triton-projections``: the opt-in skinny-GEMM decode projections (``decode_projections = "triton"``):
   correctness on the decode workloads, their kernel times next to cuBLAS' (block_n x warps), and the layer's
   decode call time with them.
Prints a table with the issue-5 targets beside and writes everything to the JSON file.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
from triton.testing import do_bench

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ssmkit.granite import FastMambaLayer, GraniteMambaConfig, MambaCache, ReferenceMambaLayer  # noqa: E402
from ssmkit.harness.granite_bench import timed_side  # noqa: E402
from ssmkit.harness.granite_run import Readout, build_layer, default_slice, make_inputs  # noqa: E402
from ssmkit.harness.granite_verify import verify_workload  # noqa: E402
from ssmkit.harness.report import format_table, run_metadata, write_json  # noqa: E402
from ssmkit.harness.timing import median_time  # noqa: E402
from ssmkit.harness.workloads import (DECODE, default_workloads_path, load_workloads, parse_workload,  # noqa: E402
                                      select)
import ssmkit.kernels.granite.ssd_decode as ssd_decode  # noqa: E402
from ssmkit.kernels.granite.ssd_decode import granite_decode_linear, granite_decode_step  # noqa: E402

# Issue 5 targets, ms per call including launch.
TARGETS_MS = {"prefill_b1_l4096": 0.30, "prefill_b1_l16384": 0.90, "prefill_varlen_b8": 0.75,
              "decode_b1": 0.022, "decode_b8": 0.026, "decode_b64": 0.060}
ROTATIONS = 3
EXTRA_CHECKS = [{"name": "decode_b8_p512_s4", "kind": "decode", "batch": 8, "prefix": 512, "steps": 4, "seed": 77,
                 "purpose": "correctness"}]


def log(msg: str) -> None:
    print(msg, flush=True)


def check_correctness(fast, ref, truth, layer_slice, workloads, device) -> list[dict]:
    readout16 = Readout.from_slice(layer_slice, device)
    readout32 = Readout.from_slice(layer_slice, device, torch.float32)
    rows = []
    for w in workloads:
        t0 = time.perf_counter()
        checks = verify_workload(w, fast, ref, truth, readout16, readout32, device)
        worst = max((c.error / c.bound for c in checks if c.bound), default=0.0)
        bad = [f"{c.quantity} ({c.error} > {c.bound}; {c.note})" for c in checks if not c.ok]
        rows.append({"workload": w.name, "checks": len(checks), "failed": bad, "worst_error_over_bound": worst})
        log(f"check {w.name}: {len(checks)} checks, {'ok' if not bad else 'FAILED ' + '; '.join(bad)}, "
            f"worst error/bound {worst:.2f} ({time.perf_counter() - t0:.1f} s)")
        torch.cuda.empty_cache()
    return rows


def check_graph_decode(fast, config, device, batch: int) -> dict:
    """Graph step == eager step bitwise, states too; the first output survives the second call."""
    gen = torch.Generator().manual_seed(batch)
    prefix = torch.randn(batch, 37, config.hidden_size, generator=gen).to(device, torch.bfloat16)
    toks = [torch.randn(batch, 1, config.hidden_size, generator=gen).to(device, torch.bfloat16) for _ in range(2)]
    with torch.no_grad():
        _, cache = fast(prefix)
        eager_cache = cache.clone()
        fast.use_cuda_graphs = False
        eager = [fast(t, eager_cache)[0] for t in toks]
        fast.use_cuda_graphs = True
        graph = [fast(t, cache)[0] for t in toks]
        states_equal = (torch.equal(eager_cache.conv_state, cache.conv_state)
                        and torch.equal(eager_cache.ssm_state, cache.ssm_state))
        first_copy = graph[0].clone()
        fast(toks[0], cache)  # a third call must not change the outputs already returned
    res = {
        "batch": batch,
        "outputs_bitwise_equal": all(torch.equal(a, b) for a, b in zip(eager, graph)),
        "max_abs_output_diff": max((a.float() - b.float()).abs().max().item() for a, b in zip(eager, graph)),
        "states_bitwise_equal": states_equal,
        "output_not_aliased": torch.equal(first_copy, graph[0]),
    }
    log(f"graph check B={batch}: {res}")
    return res


def host_check_us(layer, hidden, cache, reps: int = 2000) -> float:
    for _ in range(100):
        layer.check_forward_args(hidden, cache, None)
    t0 = time.perf_counter()
    for _ in range(reps):
        layer.check_forward_args(hidden, cache, None)
    return (time.perf_counter() - t0) / reps * 1e6


def graph_of(fn):
    """Capture ``fn`` (after a warm-up on a side stream) and return the graph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g


def decode_pieces(fast, config, device, batch: int, block_p=None, num_warps=None) -> dict:
    """Device times (do_bench median, ms) of the decode step's pieces at ``batch`` on a scratch cache."""
    c = config
    cache = live_cache(c, batch, device)
    h = torch.randn(batch, c.hidden_size, device=device, dtype=torch.bfloat16)
    zx = F.linear(h, fast.in_proj.weight)
    y = torch.randn(batch, c.intermediate_size, device=device, dtype=torch.bfloat16)
    out = {}
    with torch.no_grad():
        out["in_proj_ms"] = do_bench(lambda: F.linear(h, fast.in_proj.weight), return_mode="median")
        out["out_proj_ms"] = do_bench(lambda: F.linear(y, fast.out_proj.weight), return_mode="median")
        g = graph_of(lambda: granite_decode_step(
            zx, cache.conv_state, cache.ssm_state, fast.conv1d.weight, fast.conv1d.bias, fast.dt_bias, fast.A_log,
            fast.D, fast.norm.weight, c.rms_norm_eps, block_p=block_p, num_warps=num_warps))
        out["decode_kernels_ms"] = do_bench(g.replay, return_mode="median")
    return out


def live_cache(config, batch: int, device) -> MambaCache:
    cache = MambaCache.zeros(config, batch, device=device)
    cache.ssm_state.normal_()
    cache.conv_state.normal_()
    cache.has_previous_state = True
    return cache


def latency_ms(fn, device, reps: int = 200) -> float:
    """Median of single synchronised calls with CUDA events around them (the harness's ``time_call``)."""
    return median_time(lambda: None, lambda _: fn(), device, reps=reps, warmup=10)


def decode_variants(fast, config, device, batch: int) -> dict:
    """Latency of the layer's decode on one live cache: full forward, ``_decode`` alone (no argument checks or
    dispatch), replay of the captured step alone; and the host cost of the reference's argument checks."""
    cache = live_cache(config, batch, device)
    toks = [torch.randn(batch, 1, config.hidden_size, device=device, dtype=torch.bfloat16) for _ in range(3)]
    it = iter(range(10**9))
    res = {}
    with torch.no_grad():
        entry = fast._decode_graph(toks[0], cache)
        res["forward_latency_ms"] = latency_ms(lambda: fast(toks[next(it) % 3], cache), device)
        res["decode_only_latency_ms"] = latency_ms(lambda: fast._decode(toks[next(it) % 3], cache), device)
        res["replay_latency_ms"] = latency_ms(entry.graph.replay, device)
        res["replay_do_bench_ms"] = do_bench(entry.graph.replay, return_mode="median")
        res["host_check_forward_args_us"] = host_check_us(fast, toks[0], cache)
    return res


def time_workload(layer, w, config, device, reps: int) -> float:
    with torch.no_grad():
        sets = [make_inputs(w, config.hidden_size, device, torch.bfloat16, r) for r in range(ROTATIONS)]
        prepare, call = timed_side(layer, w, sets)
        return median_time(prepare, call, device, reps=reps, warmup=3)


def do_bench_workload(layer, w, config, device) -> float:
    """do_bench median (ms) of full calls rotating over the input sets (decode: the caches keep advancing)."""
    with torch.no_grad():
        sets = [make_inputs(w, config.hidden_size, device, torch.bfloat16, r) for r in range(ROTATIONS)]
        if w.kind == DECODE:
            args = [(s.tokens[0], layer(s.prefix)[1]) for s in sets]
            calls = [lambda a=a: layer(a[0], a[1]) for a in args]
        else:
            calls = [lambda s=s: layer(s.hidden, attention_mask=s.mask) for s in sets]
        it = iter(range(10**9))
        return do_bench(lambda: calls[next(it) % len(calls)](), return_mode="median")


def sweep(fast, config, device) -> tuple[list[dict], dict[int, tuple[int, int]]]:
    """Kernel-only times per (batch, block_p, num_warps); returns the rows and the fastest config per batch."""
    rows, best = [], {}
    for batch in (1, 8, 64):
        default = ssd_decode.decode_launch_config(batch, config.num_heads, config.head_dim, config.d_state, True)
        for block_p in (8, 16, 32, 64):
            for warps in (1, 2, 4, 8):
                if block_p * config.d_state // (32 * warps) < 4:
                    continue
                t = decode_pieces(fast, config, device, batch, block_p, warps)["decode_kernels_ms"]
                rows.append({"batch": batch, "block_p": block_p, "num_warps": warps, "decode_kernels_ms": t,
                             "is_default": (block_p, warps) == default})
                log(f"sweep B={batch} block_p={block_p} warps={warps}: {t * 1e3:.1f} us"
                    + (" (default)" if (block_p, warps) == default else ""))
        fastest = min((r for r in rows if r["batch"] == batch), key=lambda r: r["decode_kernels_ms"])
        best[batch] = (fastest["block_p"], fastest["num_warps"])
    return rows, best


def projection_sweep(fast, config, device, batch: int) -> list[dict]:
    """do_bench medians (ms) of the two decode projections: cuBLAS and the Triton skinny GEMM per config."""
    x_in = torch.randn(batch, config.hidden_size, device=device, dtype=torch.bfloat16)
    x_out = torch.randn(batch, config.intermediate_size, device=device, dtype=torch.bfloat16)
    rows = []
    for name, x, w in (("in_proj", x_in, fast.in_proj.weight), ("out_proj", x_out, fast.out_proj.weight)):
        cublas_ms = do_bench(lambda: F.linear(x, w), return_mode="median")
        rows.append({"batch": batch, "proj": name, "impl": "cublas", "ms": cublas_ms})
        for block_n in (16, 32, 64):
            for warps in (4, 8):
                t = do_bench(lambda: granite_decode_linear(x, w, block_n=block_n, num_warps=warps),
                             return_mode="median")
                rows.append({"batch": batch, "proj": name, "impl": "triton", "block_n": block_n,
                             "num_warps": warps, "ms": t})
        best = min((r for r in rows if r["proj"] == name and r["impl"] == "triton"), key=lambda r: r["ms"])
        log(f"projection {name} B={batch}: cublas {cublas_ms * 1e3:.1f} us, triton best "
            f"{best['ms'] * 1e3:.1f} us (block_n {best['block_n']}, warps {best['num_warps']})")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="JSON path (bench/results/granite_decode_<tag>.json)")
    ap.add_argument("--commit", default=None, help="git commit of the tree (the device copy has no .git)")
    ap.add_argument("--sweep", action="store_true", help="also sweep the decode kernel's tile rows and warps")
    ap.add_argument("--skip-checks", action="store_true", help="timings only")
    ap.add_argument("--triton-projections", action="store_true",
                    help="also check and time the opt-in Triton skinny-GEMM decode projections")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        log("granite_layer_bench: needs CUDA")
        return 2
    device = "cuda"
    meta = run_metadata(sys.argv, device)
    if args.commit:
        meta["git_commit"] = args.commit
    result = {**meta, "targets_ms": TARGETS_MS}
    t_start = time.perf_counter()
    layer_slice = default_slice()
    config: GraniteMambaConfig = layer_slice.config
    fast = build_layer(FastMambaLayer, layer_slice, device, torch.bfloat16)
    ref = build_layer(ReferenceMambaLayer, layer_slice, device, torch.bfloat16)
    bench = select(load_workloads(default_workloads_path(device)), "bench")

    if not args.skip_checks:
        truth = build_layer(ReferenceMambaLayer, layer_slice, device, torch.float32)
        extra = [parse_workload(e) for e in EXTRA_CHECKS]
        result["checks"] = check_correctness(fast, ref, truth, layer_slice, bench + extra, device)
        if args.triton_projections:
            fast.decode_projections = "triton"
            result["checks_triton_projections"] = check_correctness(
                fast, ref, truth, layer_slice, [w for w in bench + extra if w.kind == DECODE], device)
            fast.decode_projections = "cublas"
        del truth
        torch.cuda.empty_cache()
        result["graph_checks"] = [check_graph_decode(fast, config, device, b) for b in (1, 8, 64)]
        write_json(args.out, result)  # partial results survive a time-out of the later phases

    if args.sweep:
        result["sweep"], best = sweep(fast, config, device)
        default_config = ssd_decode.decode_launch_config

        def tuned(batch, nheads, headdim, dstate, on_gpu):
            return best[batch] if on_gpu and batch in best else default_config(batch, nheads, headdim, dstate, on_gpu)

        ssd_decode.decode_launch_config = tuned
        fast._decode_graphs.clear()
        result["tuned_launch_config"] = {str(b): list(v) for b, v in best.items()}
        log(f"tuned launch config (block_p, num_warps) per batch: {best}")
        write_json(args.out, result)

    rows = []
    for w in bench:
        decode = w.kind == DECODE
        row = {"name": w.name, "target_ms": TARGETS_MS.get(w.name)}
        row["fast_ms"] = time_workload(fast, w, config, device, reps=200 if decode else 30)
        row["fast_do_bench_ms"] = do_bench_workload(fast, w, config, device)
        row["reference_ms"] = time_workload(ref, w, config, device, reps=30 if decode else 5)
        if decode:
            fast.use_cuda_graphs = False
            row["fast_eager_ms"] = time_workload(fast, w, config, device, reps=100)
            fast.use_cuda_graphs = True
            row.update(decode_pieces(fast, config, device, w.batch))
            row.update(decode_variants(fast, config, device, w.batch))
            if args.triton_projections:
                row["projection_sweep"] = projection_sweep(fast, config, device, w.batch)
                fast.decode_projections = "triton"
                row["fast_triton_projections_ms"] = time_workload(fast, w, config, device, reps=200)
                fast.decode_projections = "cublas"
            state_bytes = 2 * w.batch * config.num_heads * config.head_dim * config.d_state * 4
            row["kernels_state_tb_per_s"] = state_bytes / (row["decode_kernels_ms"] * 1e-3) / 1e12
        row["speedup_vs_reference"] = row["reference_ms"] / row["fast_ms"]
        rows.append(row)
        log(f"time {w.name}: {row}")
        torch.cuda.empty_cache()
    result["timings"] = rows
    result["wall_s"] = time.perf_counter() - t_start

    log(format_table(
        ["workload", "fast ms (call)", "target ms", "fast do_bench", "reference ms", "speedup", "eager ms",
         "triton proj ms"],
        [[r["name"], r["fast_ms"], r["target_ms"], r["fast_do_bench_ms"], r["reference_ms"],
          r["speedup_vs_reference"], r.get("fast_eager_ms"), r.get("fast_triton_projections_ms")] for r in rows]))
    log(format_table(
        ["decode", "forward", "_decode only", "replay", "replay do_bench", "in_proj", "kernels", "out_proj",
         "kernel TB/s", "checks us"],
        [[r["name"], r["forward_latency_ms"], r["decode_only_latency_ms"], r["replay_latency_ms"],
          r["replay_do_bench_ms"], r["in_proj_ms"], r["decode_kernels_ms"], r["out_proj_ms"],
          r["kernels_state_tb_per_s"], r["host_check_forward_args_us"]] for r in rows if "in_proj_ms" in r]))
    write_json(args.out, result)
    log(f"wrote {args.out} ({result['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
