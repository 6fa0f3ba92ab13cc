"""Granite prefill kernels on CUDA: correctness against the reference layer at the real config, and timings.

For each prefill workload of src/ssmkit/granite/workloads.json (bench ones, plus the chunk-edge correctness one),
builds the reference layer in bf16 and in fp32 ("the same math in fp32") from ``synthetic_slice``, runs
in_proj -> causal_conv1d_silu_prefill -> ssd_chunked_prefill -> gated_rmsnorm -> out_proj, and reports
||kernel - fp32|| / ||fp32|| beside ||reference_bf16 - fp32|| / ||fp32|| for the normed activations (the out_proj
input), the layer output, the final ssm state; the conv state must equal the reference's bit for bit.
Then times each kernel, the three together, the GEMMs and the whole composition with triton's do_bench (median,
L2 flushed between calls, 3 rotating input sets), for several kernel variants.

Usage (GPU machine): PYTHONPATH=src python3 bench/granite_prefill_bench.py --out DIR [--quick]
Writes DIR/granite_prefill_<tag>.json and prints a table.
"""
import argparse
import itertools
import json
import os
import subprocess
import time
from pathlib import Path

import torch
import triton
from triton.testing import do_bench

from ssmkit.granite import GraniteMambaConfig, ReferenceMambaLayer, synthetic_slice
from ssmkit.granite.reference import recurrent_mask
from ssmkit.kernels.granite import causal_conv1d_silu_prefill, gated_rmsnorm, ssd_chunked_prefill
from ssmkit.kernels.granite.ssd_prefill import PREC_TF32

WORKLOADS = Path(__file__).resolve().parents[1] / "src/ssmkit/granite/workloads.json"
VARIANTS = {  # kernel options per variant (defaults of the kernel wrappers unless given)
    "v0_default": {},
    "v1_yf32": dict(ssd=dict(y_dtype=torch.float32)),
    "v2_heads4": dict(ssd=dict(scan_heads=4)),
    "v3_heads4_bm128_w8": dict(ssd=dict(scan_heads=4, block_m=128, launch={"scan": dict(num_warps=8)})),
    "v4_bm128_w8": dict(ssd=dict(block_m=128, launch={"scan": dict(num_warps=8), "state": dict(num_warps=8)})),
    "v5_percb_heads4": dict(ssd=dict(shared_cb=False, scan_heads=4)),
    "v6_small_tiles": dict(ssd=dict(block_s=256, launch={"pass": dict(num_warps=2)}),
                           conv=dict(block_l=32, block_c=256), norm=dict(block_t=4, num_warps=16)),
    "v7_tf32": dict(ssd=dict(precision=PREC_TF32, y_dtype=torch.float32)),
    "v8_cb_spread": dict(ssd=dict(cb_spread=True)),  # the layer's SSD settings since Phase 2
}
# Session 3 sweep: the layer's settings (v8) with other launch options for the chunk-state and scan kernels
# (defaults: 4 warps, Triton's default 3 stages, block_m 64).
_CB = dict(cb_spread=True)
VARIANTS.update({
    "s1_scan_w8": dict(ssd=dict(_CB, launch={"scan": dict(num_warps=8)})),
    "s2_scan_st2": dict(ssd=dict(_CB, launch={"scan": dict(num_stages=2)})),
    "s3_scan_st4": dict(ssd=dict(_CB, launch={"scan": dict(num_stages=4)})),
    "s4_state_w8": dict(ssd=dict(_CB, launch={"state": dict(num_warps=8)})),
    "s5_state_st2": dict(ssd=dict(_CB, launch={"state": dict(num_stages=2)})),
    "s6_bm32": dict(ssd=dict(_CB, block_m=32)),
    "s7_state_st4": dict(ssd=dict(_CB, launch={"state": dict(num_stages=4)})),
})


def prefill_between(layer, zxbcdt, mask, variant, conv_state, ssm_state):
    """Everything between the two GEMMs: (b, L, in_proj_dim) bf16 -> normed (b, L, I) bf16; writes the states."""
    c = layer.config
    i, cd = c.intermediate_size, c.conv_dim
    xbc = causal_conv1d_silu_prefill(zxbcdt, layer.conv1d.weight, layer.conv1d.bias, attention_mask=mask,
                                     conv_state_out=conv_state, xbc_offset=i, **variant.get("conv", {}))
    y = ssd_chunked_prefill(xbc, zxbcdt[..., i + cd:], layer.dt_bias, layer.A_log, layer.D, c.chunk_size,
                            ssm_state_out=ssm_state, attention_mask=mask, **variant.get("ssd", {}))
    return gated_rmsnorm(y, zxbcdt[..., :i], layer.norm.weight, c.rms_norm_eps, attention_mask=mask,
                         **variant.get("norm", {}))


def in_proj(layer, h, mask):
    if mask is not None:
        h = (h * mask[:, :, None]).to(h.dtype)
    return layer.in_proj(h)


def make_inputs(cfg, lengths, seed, device):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    b, seqlen = len(lengths), max(lengths)
    h = torch.randn(b, seqlen, cfg.hidden_size, generator=gen).to(device, torch.bfloat16)
    mask = torch.stack([torch.arange(seqlen) >= seqlen - n for n in lengths]).to(device, torch.int64)
    return h, recurrent_mask(mask, seqlen), mask


def rel(a, ref, sel=None):
    a, ref = a.double(), ref.double()
    if sel is not None:
        a, ref = a[sel], ref[sel]
    return ((a - ref).norm() / ref.norm()).item()


def check_workload(cfg, layers, wl, variants, device):
    ref16, ref32 = layers
    h, mask, full_mask = make_inputs(cfg, wl["lengths"], wl["seed"], device)
    real = full_mask.bool()
    captured = {}
    hooks = [m.norm.register_forward_hook(lambda mod, inp, out, k=k: captured.__setitem__(k, out))
             for k, m in (("r16", ref16), ("r32", ref32))]
    with torch.no_grad():
        out16, cache16 = ref16(h, None, full_mask)
        out32, cache32 = ref32(h.float(), None, full_mask)
        row = {"name": wl["name"], "lengths": wl["lengths"],
               "ref_bf16": {"normed": rel(captured["r16"].to(torch.bfloat16), captured["r32"], real),
                            "out": rel(out16, out32, real), "ssm_state": rel(cache16.ssm_state, cache32.ssm_state)},
               "kernel": {}}
        for name, var in variants.items():
            b = h.shape[0]
            conv_state = torch.full((b, cfg.conv_dim, cfg.d_conv), float("nan"), device=device, dtype=torch.bfloat16)
            ssm_state = torch.full((b, cfg.num_heads, cfg.head_dim, cfg.d_state), float("nan"), device=device)
            zx = in_proj(ref16, h, mask)
            normed = prefill_between(ref16, zx, mask, var, conv_state, ssm_state)
            out = ref16.out_proj(normed)
            row["kernel"][name] = {
                "normed": rel(normed, captured["r32"], real), "out": rel(out, out32, real),
                "ssm_state": rel(ssm_state, cache32.ssm_state),
                "conv_state_equal": bool(torch.equal(conv_state, cache16.conv_state)),
                "pads_zero": bool((normed[~real] == 0).all()) if (~real).any() else True,
                "finite": bool(torch.isfinite(out).all() and torch.isfinite(ssm_state).all()),
            }
    for hk in hooks:
        hk.remove()
    return row


def _call_once(fn, **_):
    """Stand-in for do_bench in --smoke runs (CPU interpreter): checks the timed code paths run."""
    fn()
    return float("nan")


def time_workload(cfg, layer, wl, variants, device, quick, timer=do_bench):
    sets = [make_inputs(cfg, wl["lengths"], wl["seed"] + 17 * k, device) for k in range(3)]
    b = len(wl["lengths"])
    conv_state = torch.empty((b, cfg.conv_dim, cfg.d_conv), device=device, dtype=torch.bfloat16)
    ssm_state = torch.empty((b, cfg.num_heads, cfg.head_dim, cfg.d_state), device=device)
    with torch.no_grad():
        zxs = [in_proj(layer, h, m) for h, m, _ in sets]
        normeds = [prefill_between(layer, zx, m, VARIANTS["v0_default"], conv_state, ssm_state)
                   for zx, (_, m, _) in zip(zxs, sets)]
    rot = itertools.count()

    def bench(fn):
        return timer(lambda: fn(next(rot) % 3), warmup=10 if quick else 25, rep=40 if quick else 100,
                        return_mode="median")

    i, cd = cfg.intermediate_size, cfg.conv_dim
    res = {"name": wl["name"], "lengths": wl["lengths"], "tokens": b * max(wl["lengths"]),
           "real_tokens": sum(wl["lengths"])}
    with torch.no_grad():
        res["in_proj_ms"] = bench(lambda k: in_proj(layer, sets[k][0], sets[k][1]))
        res["out_proj_ms"] = bench(lambda k: layer.out_proj(normeds[k]))
        res["variants"] = {}
        for name, var in variants.items():
            r = {}
            xbcs = [causal_conv1d_silu_prefill(zx, layer.conv1d.weight, layer.conv1d.bias, attention_mask=m,
                                               conv_state_out=conv_state, xbc_offset=i) for zx, (_, m, _) in
                    zip(zxs, sets)]
            r["conv_ms"] = bench(lambda k: causal_conv1d_silu_prefill(
                zxs[k], layer.conv1d.weight, layer.conv1d.bias, attention_mask=sets[k][1],
                conv_state_out=conv_state, xbc_offset=i, **var.get("conv", {})))
            ys = [ssd_chunked_prefill(x, zx[..., i + cd:], layer.dt_bias, layer.A_log, layer.D, cfg.chunk_size,
                                      ssm_state_out=ssm_state, attention_mask=m, **var.get("ssd", {}))
                  for x, zx, (_, m, _) in zip(xbcs, zxs, sets)]
            r["ssd_ms"] = bench(lambda k: ssd_chunked_prefill(
                xbcs[k], zxs[k][..., i + cd:], layer.dt_bias, layer.A_log, layer.D, cfg.chunk_size,
                ssm_state_out=ssm_state, attention_mask=sets[k][1], **var.get("ssd", {})))
            r["norm_ms"] = bench(lambda k: gated_rmsnorm(ys[k], zxs[k][..., :i], layer.norm.weight,
                                                         cfg.rms_norm_eps, attention_mask=sets[k][1],
                                                         **var.get("norm", {})))
            r["between_ms"] = bench(lambda k: prefill_between(layer, zxs[k], sets[k][1], var, conv_state,
                                                              ssm_state))
            r["layer_ms"] = bench(lambda k: layer.out_proj(prefill_between(
                layer, in_proj(layer, sets[k][0], sets[k][1]), sets[k][1], var, conv_state, ssm_state)))
            if device.type == "cuda":
                r.update(host_and_graph(lambda: prefill_between(layer, zxs[0], sets[0][1], var, conv_state,
                                                                ssm_state)))
                r["kernel_us_per_call"] = profile_kernels(
                    lambda: prefill_between(layer, zxs[0], sets[0][1], var, conv_state, ssm_state))
            res["variants"][name] = r
            del xbcs, ys
        if not quick:
            res["reference_layer_ms"] = timer(lambda: layer(sets[0][0], None, sets[0][2]), warmup=1, rep=5,
                                                 return_mode="median")
    return res


def host_and_graph(fn, calls=20):
    """Host time to enqueue one call (no sync inside the loop), and the device time of one call replayed from a
    CUDA graph (no launch gaps), in ms."""
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    host_ms = (time.perf_counter() - t0) / calls * 1e3
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    graph_ms = do_bench(graph.replay, return_mode="median")
    return {"host_enqueue_ms": host_ms, "graph_ms": graph_ms}


def profile_kernels(fn, calls=5):
    """Device time per call of each kernel fn launches (torch.profiler), in microseconds."""
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    return {e.key: e.device_time_total / calls for e in prof.key_averages() if e.device_time_total > 0}


def ceilings(device):
    src = torch.randn(256 * 1024 * 1024, device=device)  # 1 GiB
    dst = torch.empty_like(src)
    t = do_bench(lambda: dst.copy_(src), return_mode="median")
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    tg = do_bench(lambda: a @ a, return_mode="median")
    del src, dst
    return {"copy_TBps": 2 * 4 * 256 * 1024 * 1024 / t / 1e9, "bf16_gemm_TFLOPs": 2 * 8192**3 / tg / 1e9}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--tag", default="v1")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--smoke", action="store_true", help="tiny config on the CPU interpreter, no timing")
    args = ap.parse_args()
    device = torch.device("cpu" if args.smoke else "cuda")
    if args.smoke:  # the interpreter needs the tests' bf16 tl.dot patch (tests/conftest.py)
        import importlib.util
        spec = importlib.util.spec_from_file_location("conftest", WORKLOADS.parents[3] / "tests/conftest.py")
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    torch.manual_seed(0)
    variants = {k: VARIANTS[k] for k in args.variants.split(",")}
    cfg = GraniteMambaConfig.tiny() if args.smoke else GraniteMambaConfig()
    sl = synthetic_slice(cfg, seed=0)
    ref16 = ReferenceMambaLayer(cfg).to(device, torch.bfloat16)
    ref16.load_state_dict(sl.mamba)
    ref32 = ReferenceMambaLayer(cfg).to(device, torch.float32)
    ref32.load_state_dict({k: v.float() for k, v in sl.mamba.items()})
    ref16.eval(), ref32.eval()
    wls = [w for w in json.loads(WORKLOADS.read_text()) if w["kind"] == "prefill" and "continue" not in w
           and (w["purpose"] == "bench" or w["name"] == "prefill_chunk_edges_b4")]
    if args.smoke:
        wls = [dict(w, lengths=[max(1, n // 256) for n in w["lengths"]]) for w in wls]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = ""
    if len(commit) != 40:  # the device machine's copy of the tree has no git metadata
        commit = os.environ.get("SSMKIT_GIT_COMMIT", "unknown")
    record = {"command": "PYTHONPATH=src python3 bench/granite_prefill_bench.py " + " ".join(
        f"--{k} {v}" if not isinstance(v, bool) else (f"--{k}" if v else "") for k, v in vars(args).items()),
        "git_commit": commit, "gpu": "cpu-interpreter" if args.smoke else torch.cuda.get_device_name(), "torch": torch.__version__,
        "triton": triton.__version__, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "ceilings": {} if args.smoke else ceilings(device), "correctness": [], "timings": []}
    print(record["ceilings"], flush=True)
    for wl in wls:
        t0 = time.time()
        row = check_workload(cfg, (ref16, ref32), wl, variants, device)
        record["correctness"].append(row)
        print(f"check {wl['name']} ({time.time() - t0:.1f}s): ref_bf16 {row['ref_bf16']}", flush=True)
        for k, v in row["kernel"].items():
            print(f"    {k}: {v}", flush=True)
    del ref32
    torch.cuda.empty_cache()
    for wl in wls:
        if wl["purpose"] != "bench":
            continue
        res = time_workload(cfg, ref16, wl, variants, device, args.quick,
                            timer=_call_once if args.smoke else do_bench)
        record["timings"].append(res)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"granite_prefill_{args.tag}.json").write_text(json.dumps(record, indent=1))
    print(f"\n{'workload':22s} {'variant':18s} {'conv':>7s} {'ssd':>7s} {'norm':>7s} {'between':>8s} "
          f"{'in_proj':>8s} {'out_proj':>8s} {'layer':>7s}  (ms, medians)")
    for res in record["timings"]:
        for name, r in res["variants"].items():
            print(f"{res['name']:22s} {name:18s} {r['conv_ms']:7.4f} {r['ssd_ms']:7.4f} {r['norm_ms']:7.4f} "
                  f"{r['between_ms']:8.4f} {res['in_proj_ms']:8.4f} {res['out_proj_ms']:8.4f} {r['layer_ms']:7.4f}")
        if "reference_layer_ms" in res:
            print(f"{res['name']:22s} reference layer {res['reference_layer_ms']:.3f} ms")
        for name, r in res["variants"].items():
            if "host_enqueue_ms" in r:
                print(f"{res['name']:22s} {name:18s} host enqueue {r['host_enqueue_ms']:.4f} ms, graph replay "
                      f"{r['graph_ms']:.4f} ms; kernels (us, L2-warm): "
                      + ", ".join(f"{k.split('_kernel')[0].lstrip('_')}={v:.1f}"
                                  for k, v in r["kernel_us_per_call"].items()))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
