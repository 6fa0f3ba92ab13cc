"""Same-process A/B of the Granite decode call: two FastMambaLayers with the same weights, each with its own layer
attributes (``--a`` / ``--b``, JSON, e.g. '{"decode_projections": "cublas"}'), each capturing its own decode graphs.

Per decode bench workload: the outputs and cache states of one call of each side, compared (``equal``: bit for
bit; ``out_rel_diff``: norm-relative difference of the outputs), then the harness call time (``time_call``: CUDA
events from an idle GPU, host time included), A and B alternating in blocks of 10 calls, median us. (Session 5's
run 1 compared a baseline copy of mapped_io.py instead, with this script at commit 20cf596.)
``--sweep-out`` first times the decode step between the projections alone (unfused + cuBLAS out_proj against
``granite_decode_step_out`` at several tiles) in CUDA graphs.
Usage (CUDA): PYTHONPATH=src python bench/granite_decode_ab.py --a JSON --b JSON --out DIR [--calls 300] [--sweep-out]
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from granite_conv_bench import graph_us  # noqa: E402

from ssmkit.granite import FastMambaLayer  # noqa: E402
from ssmkit.harness.granite_bench import timed_side  # noqa: E402
from ssmkit.harness.granite_run import build_layer, default_slice, make_inputs  # noqa: E402
from ssmkit.harness.report import run_metadata  # noqa: E402
from ssmkit.harness.timing import time_call  # noqa: E402
from ssmkit.harness.workloads import default_workloads_path, load_workloads  # noqa: E402
from ssmkit.kernels.granite.ssd_decode import granite_decode_step, granite_decode_step_out  # noqa: E402

OUT_CONFIGS = [dict(block_n=16, block_k=256, out_warps=4, out_stages=3), dict(block_n=16, block_k=512, out_warps=4,
               out_stages=3), dict(block_n=16, block_k=256, out_warps=8, out_stages=4),
               dict(block_n=32, block_k=256, out_warps=4, out_stages=3), dict(block_n=16, block_k=128, out_warps=4,
               out_stages=4)]


def sweep_out(layer, batches=(1, 8, 16)) -> list[dict]:
    """The decode step between the projections alone, in a CUDA graph of 20 launches (us per step): the unfused
    kernels + cuBLAS out_proj against ``granite_decode_step_out`` at each of OUT_CONFIGS."""
    rows = []
    gen = torch.Generator().manual_seed(5)
    c = layer.config
    for b in batches:
        zx = torch.randn(b, layer.in_proj.out_features, generator=gen).to("cuda", torch.bfloat16)
        conv = torch.randn(b, c.conv_dim, c.d_conv, generator=gen).to("cuda", torch.bfloat16)
        ssm = torch.randn(b, c.num_heads, c.head_dim, c.d_state, generator=gen).to("cuda")
        args = (zx, conv, ssm, layer.conv1d.weight, layer.conv1d.bias, layer.dt_bias, layer.A_log, layer.D,
                layer.norm.weight, c.rms_norm_eps)
        ref = F.linear(granite_decode_step(*args), layer.out_proj.weight)
        row = {"batch": b, "unfused_us": graph_us(lambda: F.linear(granite_decode_step(*args), layer.out_proj.weight),
                                                  20, 20)}
        for cfg in OUT_CONFIGS:
            got = granite_decode_step_out(*args, layer.out_proj.weight, **cfg)
            rel = ((got.double() - ref.double()).norm() / ref.double().norm()).item()
            us = graph_us(lambda cfg=cfg: granite_decode_step_out(*args, layer.out_proj.weight, **cfg), 20, 20)
            row[json.dumps(cfg)] = {"us": us, "rel_diff_vs_unfused": rel}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", default="{}")
    ap.add_argument("--b", default='{"decode_projections": "cublas"}')
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--sweep-out", action="store_true", help="also time the fused out launch's configurations")
    args = ap.parse_args()
    device = torch.device("cuda")
    sl = default_slice()
    layers = {}
    for name, attrs in (("a", json.loads(args.a)), ("b", json.loads(args.b))):
        layers[name] = build_layer(FastMambaLayer, sl, device, torch.bfloat16)
        for key, value in attrs.items():
            setattr(layers[name], key, value)
    rows = []
    with torch.no_grad():
        sweep = sweep_out(layers["a"]) if args.sweep_out else None
        for w in load_workloads(default_workloads_path("cuda")):
            if w.purpose != "bench" or w.kind != "decode":
                continue
            inputs = [make_inputs(w, sl.config.hidden_size, "cuda", torch.bfloat16, rotation=r) for r in range(3)]
            sides, first = {}, {}
            for name, layer in layers.items():
                prepare, call = timed_side(layer, w, inputs)
                for _ in range(3):  # the first calls capture this side's graphs (one per rotation's cache)
                    call(prepare())
                token, cache = prepare()
                out = call((token, cache))[0]
                torch.cuda.synchronize()
                first[name] = (out.clone(), cache.conv_state.clone(), cache.ssm_state.clone())
                sides[name] = (prepare, call)
            equal = all(torch.equal(x, y) for x, y in zip(first["a"], first["b"]))
            rel = ((first["a"][0].double() - first["b"][0].double()).norm() / first["b"][0].double().norm()).item()
            times = {name: [] for name in sides}
            for i in range(2 * (args.calls // 10)):
                name = list(sides)[i % 2]
                prepare, call = sides[name]
                times[name] += [time_call(prepare, call, "cuda") * 1e3 for _ in range(10)]
            med = {name: statistics.median(t) for name, t in times.items()}
            rows.append(dict(workload=w.name, call_us=med, equal=equal, out_rel_diff=rel))
            print(f"{w.name:14s} a {med['a']:7.1f} us  b {med['b']:7.1f} us  equal={equal} out rel diff {rel:.1e}",
                  flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "granite_decode_ab.json"
    path.write_text(json.dumps(dict(run_metadata(None, device), a=json.loads(args.a), b=json.loads(args.b),
                                    rows=rows, out_sweep=sweep), indent=1))
    print("json:", path)


if __name__ == "__main__":
    main()
