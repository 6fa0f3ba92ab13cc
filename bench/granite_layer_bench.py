"""FastMambaLayer variants on the GPU: correctness against the reference and per-call times on the bench workloads.

Run on a CUDA machine from the repository root (pass the commit: the device copy carries a stale .git):

    python bench/granite_layer_bench.py --variants all --commit "$(git rev-parse HEAD)"

Variants are FastMambaLayer switches (``VARIANTS``; each runs on the workloads of the kinds it names):
baseline (every switch off); prefill_graphs ("whole": the whole forward in a graph) and prefill_graphs_kernels
("kernels": the 5 launches between the GEMMs in a graph, GEMMs eager), each alone, with pack_padded_gemms "rows"
(Phase 2's per-row GEMMs; the "pack" variants), and with both pack_padded_gemms "rows" and cb_spread;
pack_padded_gemms "rows" alone; Session 2's pack_padded_gemms "packed" (one GEMM per projection, kernels on the
packed varlen layout; the default) with cb_spread and "kernels" graphs, "whole" graphs or none (a "scatter" form
was measured and removed, bench/results/session2/granite_varlen_v2.json); decode_triton_proj
(``decode_projections = "triton"``). On the synthetic slice of the real config (seed 0), bf16, for every
(variant, workload):
1. Correctness: the harness's ``verify_workload`` (fast vs bf16 reference vs fp32 truth with calibrated bounds,
   readout logits and KL, cache in place, inputs untouched), as ``ssmkit granite verify`` runs it. Graph variants
   add a bitwise check: a second input set through the graph equals the same call eager (outputs and caches);
   decode variants check the decode graph against the eager step at B = 1, 8, 64 (outputs, states, no aliasing).
2. Time per call the way ``ssmkit granite bench`` times it (``timed_side`` + ``median_time``: synchronise, CUDA
   events around one forward call, host time included; 3 rotating input sets; decode restores the cache in place
   outside the timed region), plus ``triton.testing.do_bench``'s median (device time, L2 flushed) for prefill.
   The reference is timed once per workload with few calls (its own row). The JSON also has the process's peak
   memory while a cell is timed (``peak_mem_bytes``: every layer, the input sets, the variant's captured graphs).
A failure in one (variant, workload) is recorded and the run goes on. Prints one progress line per step and a
table (variant x workload: ms and PASS/FAIL), and writes JSON to --out (default: $OUT/granite_layer_phase2.json
when $OUT is set, else bench/results/granite_layer_phase2.json).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch
from triton.testing import do_bench

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from granite_prefill_bench import profile_kernels  # noqa: E402

from ssmkit.granite import FastMambaLayer, GraniteMambaConfig, ReferenceMambaLayer  # noqa: E402
from ssmkit.harness.granite_bench import describe_failure, timed_side  # noqa: E402
from ssmkit.harness.granite_run import Readout, build_layer, default_slice, make_inputs  # noqa: E402
from ssmkit.harness.granite_verify import verify_workload  # noqa: E402
from ssmkit.harness.report import format_table, run_metadata, write_json  # noqa: E402
from ssmkit.harness.timing import median_time, peak_memory_bytes, reset_peak_memory  # noqa: E402
from ssmkit.harness.workloads import DECODE, PREFILL, default_workloads_path, load_workloads, select  # noqa: E402
from ssmkit.kernels.granite.ssd_decode import granite_decode_step  # noqa: E402

# Issue 5 targets, ms per call including launch.
TARGETS_MS = {"prefill_b1_l4096": 0.30, "prefill_b1_l16384": 0.90, "prefill_varlen_b8": 0.75,
              "decode_b1": 0.022, "decode_b8": 0.026, "decode_b64": 0.060}
ROTATIONS = 3
DEVICE = "cuda"
# FastMambaLayer attributes per variant (the rest at their defaults) and the workload kinds it runs on.
DEFAULTS = {"prefill_graphs": False, "pack_padded_gemms": False, "cb_spread": False, "decode_projections": "cublas",
            "decode_fast_path": False, "decode_evict_first": False, "decode_io": "copy", "decode_conv_apart": False,
            "prefill_address_graphs": False}
VARIANTS = {
    "baseline": ({}, (PREFILL, DECODE)),
    "prefill_graphs": ({"prefill_graphs": "whole"}, (PREFILL,)),
    "prefill_graphs_kernels": ({"prefill_graphs": "kernels"}, (PREFILL,)),
    "pack_padded_gemms": ({"pack_padded_gemms": "rows"}, (PREFILL,)),
    "graphs_pack": ({"prefill_graphs": "whole", "pack_padded_gemms": "rows"}, (PREFILL,)),
    "graphs_kernels_pack": ({"prefill_graphs": "kernels", "pack_padded_gemms": "rows"}, (PREFILL,)),
    "graphs_pack_cb_spread": ({"prefill_graphs": "whole", "pack_padded_gemms": "rows", "cb_spread": True},
                              (PREFILL,)),
    "graphs_kernels_pack_cb_spread": ({"prefill_graphs": "kernels", "pack_padded_gemms": "rows", "cb_spread": True},
                                      (PREFILL,)),
    "graphs_kernels_packed_cb_spread": ({"prefill_graphs": "kernels", "pack_padded_gemms": "packed",
                                         "cb_spread": True}, (PREFILL,)),
    "graphs_packed_cb_spread": ({"prefill_graphs": "whole", "pack_padded_gemms": "packed", "cb_spread": True},
                                (PREFILL,)),
    "packed_cb_spread": ({"pack_padded_gemms": "packed", "cb_spread": True}, (PREFILL,)),
    "decode_triton_proj": ({"decode_projections": "triton"}, (DECODE,)),
    # Session 2 decode (baseline = session 1's decode): forward's fast path (bound cache -> replay) with the two
    # decode launches, with the one-launch kernel, and with the evict-first state hint (the new defaults)
    "decode_fast_path": ({"decode_fast_path": True}, (DECODE,)),
    "decode_fast_evict": ({"decode_fast_path": True, "decode_evict_first": True}, (DECODE,)),
    # Session 3: packed left-padded batches run the whole forward as one graph with MappedIO's row gather and
    # output/cache writes ("mapped"); the decode graph copies its token in and its output out through MappedIO
    "graphs_mapped_packed_cb_spread": ({"prefill_graphs": "mapped", "pack_padded_gemms": "packed",
                                        "cb_spread": True}, (PREFILL,)),
    # Session 3: the decode graph copies its token in and its output out through MappedIO's address table
    "decode_mapped": ({"decode_fast_path": True, "decode_evict_first": True, "decode_io": "mapped"}, (DECODE,)),
}
# --decode-sweep: granite_decode_step alone per batch, (block_p, num_warps, evict_first, conv_apart); the first
# entry of each batch is its baseline (session 21: the kernels at their session-20 defaults, the conv inside the state
# kernel). (Session 2 also swept a one-launch form, removed after it lost at every batch: bench/granite/NOTES.md
# "Session 2: decode".)
DECODE_SWEEP = {1: [(None, None, True, False), (None, None, True, True), (16, 4, True, True), (4, 4, True, True)],
                8: [(None, None, True, False), (None, None, True, True), (16, 4, True, True), (16, 8, True, True),
                    (32, 8, True, True), (64, 8, True, True)],
                16: [(None, None, True, False), (None, None, True, True)],
                32: [(None, None, True, False), (None, None, True, True)],
                64: [(None, None, True, False), (None, None, True, True), (4, 4, True, True), (32, 8, True, True),
                     (16, 4, True, True), (16, 8, True, True), (32, 4, True, True), (64, 4, True, True),
                     (64, 8, True, True)]}


def log(msg: str) -> None:
    print(msg, flush=True)


def configure(fast: FastMambaLayer, settings: dict) -> None:
    """Set the variant's switches (defaults for the rest) and drop every captured graph."""
    for name, value in {**DEFAULTS, **settings}.items():
        setattr(fast, name, value)
    fast.clear_graphs()
    torch.cuda.empty_cache()


def check(w, fast, ref, truth, readouts, device) -> dict:
    """The harness's checks of one workload: {"passed", "checks", "failed", "worst_error_over_bound"}."""
    checks = verify_workload(w, fast, ref, truth, *readouts, device)
    bad = [f"{c.quantity}: " + (f"{c.error} > {c.bound} " if c.bound is not None else "") + c.note
           for c in checks if not c.ok]
    worst = max((c.error / c.bound for c in checks if c.bound), default=0.0)
    return {"passed": not bad, "checks": len(checks), "failed": bad, "worst_error_over_bound": worst}


def prefill_graph_equals_eager(fast, w, config, device) -> bool:
    """Input set 1 through the captured graph and eagerly (same switches): outputs and caches bit for bit."""
    s = make_inputs(w, config.hidden_size, device, torch.bfloat16, 1)
    mode = fast.prefill_graphs
    with torch.no_grad():
        out_g, cache_g = fast(s.hidden, attention_mask=s.mask)
        fast.prefill_graphs = False
        out_e, cache_e = fast(s.hidden, attention_mask=s.mask)
        fast.prefill_graphs = mode
    return (torch.equal(out_g, out_e) and torch.equal(cache_g.conv_state, cache_e.conv_state)
            and torch.equal(cache_g.ssm_state, cache_e.ssm_state))


def decode_graph_equals_eager(fast, config, device, batch: int) -> bool:
    """Two decode steps through the graph equal them eagerly, states too; an output survives a later call."""
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
        first = graph[0].clone()
        fast(toks[0], cache)  # a third call must not change an output already returned
    return all(torch.equal(a, b) for a, b in zip(eager, graph)) and states_equal and torch.equal(first, graph[0])


def decode_host_us(layer, w, config, device, reps: int = 200) -> float:
    """Median host time (us) of one decode forward call: perf_counter around the call, no synchronisation inside
    (the enqueue cost: Python, checks, dispatch, copy in, replay, clone out launches); synchronised between calls."""
    with torch.no_grad():
        sets = [make_inputs(w, config.hidden_size, device, torch.bfloat16, r) for r in range(ROTATIONS)]
        prepare, call = timed_side(layer, w, sets)
        times = []
        for i in range(reps + 3):
            args = prepare()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            call(args)
            t1 = time.perf_counter()
            if i >= 3:
                times.append((t1 - t0) * 1e6)
        torch.cuda.synchronize()
    return sorted(times)[len(times) // 2]


def decode_kernel_sweep(config, device) -> list[dict]:
    """granite_decode_step alone (real config, random inputs) per DECODE_SWEEP entry: 20 launches from the same
    inputs must agree bit for bit with each other and are compared with the batch's first entry (which of out /
    conv_state / ssm_state differ, max abs difference); time: a CUDA graph of 20 consecutive steps replayed, events around the
    replay, per step (device time with in-graph launch gaps, the way the layer's graph runs them; L2 warm)."""
    rows = []
    for batch, configs in DECODE_SWEEP.items():
        gen = torch.Generator().manual_seed(batch)
        inter, conv_dim, nh = config.intermediate_size, config.conv_dim, config.num_heads
        zx = torch.randn(batch, inter + conv_dim + nh, generator=gen).to(device, torch.bfloat16)
        conv0 = torch.randn(batch, conv_dim, config.d_conv, generator=gen).to(device, torch.bfloat16)
        ssm0 = torch.randn(batch, nh, config.head_dim, config.d_state, generator=gen).to(device)
        params = (0.5 * torch.randn(conv_dim, 1, config.d_conv, generator=gen)).to(device, torch.bfloat16), \
            (0.2 * torch.randn(conv_dim, generator=gen)).to(device, torch.bfloat16), \
            torch.full((nh,), -3.0).to(device, torch.bfloat16), \
            torch.log(torch.linspace(1, 16, nh)).to(device, torch.bfloat16), \
            torch.ones(nh).to(device, torch.bfloat16), torch.ones(inter).to(device, torch.bfloat16), 1e-5
        base = None
        for block_p, warps, evict, apart in configs:
            row = {"batch": batch, "block_p": block_p, "num_warps": warps, "evict_first": evict, "conv_apart": apart}
            try:
                def step(conv, ssm):
                    return granite_decode_step(zx, conv, ssm, *params, evict_first=evict, block_p=block_p,
                                               num_warps=warps, conv_apart=apart)
                results = []
                for _ in range(20):
                    conv, ssm = conv0.clone(), ssm0.clone()
                    results.append((step(conv, ssm), conv, ssm))
                if base is None:
                    base = results[0]
                row["deterministic"] = all(all(torch.equal(a, b) for a, b in zip(r, results[0])) for r in results)
                row["equal_to_first"] = [torch.equal(a, b) for a, b in zip(results[0], base)]
                row["max_abs_diff_to_first"] = [(a.float() - b.float()).abs().max().item()
                                                for a, b in zip(results[0], base)]
                conv, ssm = conv0.clone(), ssm0.clone()
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    step(conv, ssm)
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    for _ in range(20):
                        step(conv, ssm)
                times = []
                for _ in range(12):
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    graph.replay()
                    end.record()
                    end.synchronize()
                    times.append(start.elapsed_time(end) * 1e3 / 20)
                row["us"] = sorted(times[2:])[len(times[2:]) // 2]
            except Exception as exc:
                row["error"] = describe_failure(exc, "decode sweep")
            log(f"decode sweep {row}")
            rows.append(row)
    return rows


def call_ms(layer, w, config, device, reps: int) -> float:
    """Median per-call time (ms) as ``ssmkit granite bench`` measures a side."""
    with torch.no_grad():
        sets = [make_inputs(w, config.hidden_size, device, torch.bfloat16, r) for r in range(ROTATIONS)]
        prepare, call = timed_side(layer, w, sets)
        return median_time(prepare, call, device, reps=reps, warmup=3)


def prefill_do_bench_ms(layer, w, config, device) -> float:
    """do_bench median (ms) of full prefill calls rotating over the input sets (device time; L2 flushed)."""
    with torch.no_grad():
        sets = [make_inputs(w, config.hidden_size, device, torch.bfloat16, r) for r in range(ROTATIONS)]
        it = iter(range(10**9))

        def call():
            s = sets[next(it) % ROTATIONS]
            layer(s.hidden, attention_mask=s.mask)

        return do_bench(call, return_mode="median")


def prefill_kernel_us(layer, w, config, device) -> dict[str, float]:
    """Device time per call (us) of each CUDA kernel one prefill call launches (torch.profiler over 5 calls after
    a warm-up), largest first: where a variant's time goes."""
    with torch.no_grad():
        s = make_inputs(w, config.hidden_size, device, torch.bfloat16, 0)
        times = profile_kernels(lambda: layer(s.hidden, attention_mask=s.mask))
    return {k[:80]: round(v, 1) for k, v in sorted(times.items(), key=lambda kv: -kv[1])}


def run_cell(variant, settings, w, fast, ref, truth, readouts, config, device, profile_names=()) -> dict:
    """Checks of one (variant, workload), and times for bench workloads; any exception is recorded, not raised."""
    row = {"variant": variant, "workload": w.name, "purpose": w.purpose, "settings": settings}
    stage = "checks"
    t0 = time.perf_counter()
    try:
        row.update(check(w, fast, ref, truth, readouts, device))
        stage = "bitwise graph check"
        if w.kind == PREFILL and fast.prefill_graphs:
            row["graph_equals_eager"] = prefill_graph_equals_eager(fast, w, config, device)
        elif w.kind == DECODE:
            row["graph_equals_eager"] = decode_graph_equals_eager(fast, config, device, w.batch)
        stage = "timing"
        if w.purpose == "bench":
            reset_peak_memory(device)
            row["ms"] = call_ms(fast, w, config, device, reps=200 if w.kind == DECODE else 30)
            if w.kind == DECODE:
                row["host_us"] = decode_host_us(fast, w, config, device)
            # process peak while timing: all layers, the input sets and this variant's captured graphs
            row["peak_mem_bytes"] = peak_memory_bytes(device)
            if w.kind == PREFILL:
                row["do_bench_ms"] = prefill_do_bench_ms(fast, w, config, device)
                if w.name in profile_names:
                    stage = "profile"
                    row["kernel_us"] = prefill_kernel_us(fast, w, config, device)
                    log("  kernels (us/call): " + ", ".join(f"{k} {v}" for k, v in list(row["kernel_us"].items())[:12]))
    except Exception as exc:  # OOM included: one cell fails, the run goes on
        row["error"] = describe_failure(exc, stage)
        row.setdefault("passed", False)
    row["wall_s"] = time.perf_counter() - t0
    times = "".join(f", {k} {row[k]:.4f}" for k in ("ms", "do_bench_ms", "host_us") if k in row)
    log(f"{variant} / {w.name}: {verdict(row)}{' ' + str(row['failed']) if row.get('failed') else ''}"
        f", graph==eager {row.get('graph_equals_eager', '-')}{times}"
        f"{', ERROR ' + row['error'] if 'error' in row else ''} ({row['wall_s']:.1f} s)")
    torch.cuda.empty_cache()
    return row


def reference_ms(ref, w, config, device) -> float | None:
    """The reference's per-call time with few calls (it is 10-30x slower than the fast layer)."""
    try:
        return call_ms(ref, w, config, device, reps=10 if w.kind == DECODE else 3)
    except Exception as exc:
        log(f"reference timing {w.name}: {describe_failure(exc, 'timing')}")
        return None


def verdict(cell: dict) -> str:
    """PASS (calibrated checks pass, graph == eager bitwise where checked), PASS* (checks pass, graph differs from
    eager in some bit: look at the cuBLAS algorithm choice under capture), FAIL."""
    if not cell.get("passed"):
        return "FAIL"
    return "PASS" if cell.get("graph_equals_eager", True) else "PASS*"


def table(cells: list[dict], workloads: list, refs: dict) -> str:
    names = [w.name for w in workloads]
    rows = [["target"] + [TARGETS_MS.get(n) for n in names], ["reference"] + [refs.get(n) for n in names]]
    for variant in VARIANTS:
        mine = {c["workload"]: c for c in cells if c["variant"] == variant}
        if not mine:
            continue
        row = [variant]
        for n in names:
            c = mine.get(n)
            if c is None:
                row.append(None)
            else:
                row.append(f"{c['ms']:.4f} {verdict(c)}" if "ms" in c else verdict(c))
        rows.append(row)
    return format_table(["ms per call"] + names, rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default="all",
                    help=f"'all', 'none' (with --decode-sweep) or a comma list of {', '.join(VARIANTS)}")
    ap.add_argument("--out", default=None, help="JSON path (default: $OUT or bench/results, granite_layer_phase2.json)")
    ap.add_argument("--commit", default=None, help="git commit of the tree (the device copy carries a stale .git)")
    ap.add_argument("--profile", default="", help="comma list of prefill bench workloads to profile per variant "
                    "(per-kernel device us per call)")
    ap.add_argument("--kinds", default="prefill,decode", help="workload kinds to run (comma list)")
    ap.add_argument("--decode-sweep", action="store_true", help="also sweep the decode kernels alone (first)")
    args = ap.parse_args()
    named = {"all": list(VARIANTS), "none": []}
    variants = named[args.variants] if args.variants in named else args.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        ap.error(f"unknown variants {unknown}; known: {list(VARIANTS)}")
    out = Path(args.out) if args.out else Path(os.environ.get("OUT") or "bench/results") / "granite_layer_phase2.json"
    if not torch.cuda.is_available():
        log("granite_layer_bench: needs CUDA")
        return 2
    device = DEVICE
    t_start = time.perf_counter()
    result = {**run_metadata(sys.argv, device), "targets_ms": TARGETS_MS, "variants": {}}
    if args.commit:
        result["git_commit"] = args.commit
    layer_slice = default_slice()
    config: GraniteMambaConfig = layer_slice.config
    fast = build_layer(FastMambaLayer, layer_slice, device, torch.bfloat16)
    ref = build_layer(ReferenceMambaLayer, layer_slice, device, torch.bfloat16)
    truth = build_layer(ReferenceMambaLayer, layer_slice, device, torch.float32)
    readouts = (Readout.from_slice(layer_slice, device), Readout.from_slice(layer_slice, device, torch.float32))
    workloads = [w for w in load_workloads(default_workloads_path(device)) if w.kind in args.kinds.split(",")]
    if args.decode_sweep:
        result["decode_sweep"] = decode_kernel_sweep(config, device)
        write_json(out, result)
    bench, correctness = select(workloads, "bench"), select(workloads, "correctness")
    log(f"{len(variants)} variants x ({len(bench)} bench + {len(correctness)} correctness-only workloads) on "
        f"{result['gpu']}")

    result["reference_ms"] = refs = {}
    for w in bench if variants else ():
        refs[w.name] = reference_ms(ref, w, config, device)
        log(f"reference {w.name}: {refs[w.name]} ms")
    cells = []
    for variant in variants:
        settings, kinds = VARIANTS[variant]
        result["variants"][variant] = {"settings": settings, "kinds": list(kinds)}
        configure(fast, settings)
        for w in correctness + bench:
            if w.kind in kinds:
                cells.append(run_cell(variant, settings, w, fast, ref, truth, readouts, config, device,
                                      profile_names=args.profile.split(",")))
        result["cells"] = cells
        write_json(out, result)  # partial results survive a time-out of later variants
    configure(fast, {})
    result["wall_s"] = time.perf_counter() - t_start
    log(table(cells, bench, refs))
    log("correctness-only workloads: " + "; ".join(f"{c['variant']}/{c['workload']} {verdict(c)}" for c in cells
                                                     if c["purpose"] != "bench"))
    write_json(out, result)
    log(f"wrote {out} ({result['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
