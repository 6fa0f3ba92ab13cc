"""Granite prefill conv (``causal_conv1d_silu_prefill``) alone on CUDA: launch options and the unmasked interior path.

Layouts: B=1 at L = 16384 and 4096 (no mask), and the left-padded B=8 bench batch in the packed varlen layout
(13,357 real tokens of 8 x 4096). Input: a random (rows, 6448) bf16 in_proj output read in place (xBC at column
3072), the real conv weight shape (3328, 1, 4) and bias; the conv state is written, as in the layer.
Each config is timed as a CUDA graph of ``--launches`` launches (host launch cost out of the picture), median of
``--reps`` replays, us per launch; every config's output and conv state must equal the baseline's bit for bit
(the session-4 default). Bytes per launch (raw xBC read + xBC written) give the rate.
Usage (CUDA): PYTHONPATH=src python bench/granite_conv_bench.py --out DIR
"""
import argparse
import statistics
from pathlib import Path

import torch

from ssmkit.harness.report import run_metadata, write_json
from ssmkit.kernels.granite import causal_conv1d_silu_prefill
from ssmkit.kernels.granite.conv1d import packed_layout_rows

IN_PROJ_DIM, XBC_OFFSET, CONV_DIM, K = 6448, 3072, 3328, 4
VARLEN_LENGTHS, VARLEN_L = [4096, 3100, 2048, 1500, 1024, 777, 512, 300], 4096
CONFIGS = {  # name: wrapper options, all spelled out; the first is the baseline (the session-4 default)
    "interior_32x128_w4": dict(block_l=32, block_c=128, num_warps=4, interior_rows=False, masked_rows=32),
    "rows_16x256_w1_m4": dict(block_l=16, block_c=256, num_warps=1, interior_rows=True, masked_rows=4),
    "rows_8x256_w1_m4": dict(block_l=8, block_c=256, num_warps=1, interior_rows=True, masked_rows=4),
    "rows_16x256_w2_m8": dict(block_l=16, block_c=256, num_warps=2, interior_rows=True, masked_rows=8),
    "rows_32x256_w2_m4": dict(block_l=32, block_c=256, num_warps=2, interior_rows=True, masked_rows=4),
    "rows_16x256_w4": dict(block_l=16, block_c=256, num_warps=4, interior_rows=True),
    "rows_32x256_w4_m8": dict(block_l=32, block_c=256, num_warps=4, interior_rows=True, masked_rows=8),
    "rows_32x128_w4": dict(block_l=32, block_c=128, num_warps=4, interior_rows=True),
    "rows_32x256_w8_m4": dict(block_l=32, block_c=256, num_warps=8, interior_rows=True, masked_rows=4),
    "rows_64x256_w8_m8": dict(block_l=64, block_c=256, num_warps=8, interior_rows=True, masked_rows=8),
    "rows_64x256_w4_m8": dict(block_l=64, block_c=256, num_warps=4, interior_rows=True, masked_rows=8),
}


def layouts(device):
    """name -> (zxbcdt, kwargs for the layout, batch, real tokens)."""
    gen = torch.Generator().manual_seed(0)
    out = {}
    for seqlen in (16384, 4096):
        zx = torch.randn(1, seqlen, IN_PROJ_DIM, generator=gen).to(device, torch.bfloat16)
        out[f"b1_l{seqlen}"] = (zx, {}, 1, seqlen)
    real = sum(VARLEN_LENGTHS)
    zx = torch.randn(real, IN_PROJ_DIM, generator=gen).to(device, torch.bfloat16)
    rows = packed_layout_rows(torch.tensor(VARLEN_LENGTHS, device=device), VARLEN_L)
    out["varlen_b8_packed"] = (zx, dict(packed_rows=rows, seqlen=VARLEN_L), len(VARLEN_LENGTHS), real)
    return out


def graph_us(fn, launches: int, reps: int) -> float:
    """Median us per launch of ``fn`` over ``reps`` replays of a graph of ``launches`` calls."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(launches):
            fn()
    times = []
    for _ in range(reps + 2):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / launches)
    return statistics.median(times[2:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--launches", type=int, default=10)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    device = torch.device("cuda")
    gen = torch.Generator().manual_seed(1)
    weight = (0.5 * torch.randn(CONV_DIM, 1, K, generator=gen)).to(device, torch.bfloat16)
    bias = (0.1 * torch.randn(CONV_DIM, generator=gen)).to(device, torch.bfloat16)
    rows = []
    for lname, (zx, layout, batch, real) in layouts(device).items():
        state = torch.empty(batch, CONV_DIM, K, device=device, dtype=torch.bfloat16)
        base_out = base_state = None
        for cname, opts in CONFIGS.items():
            def run():
                return causal_conv1d_silu_prefill(zx, weight, bias, conv_state_out=state, xbc_offset=XBC_OFFSET,
                                                  **layout, **opts)
            state.fill_(float("nan"))
            out = run()
            if base_out is None:
                base_out, base_state = out, state.clone()
            same = bool(torch.equal(out, base_out) and torch.equal(state, base_state))
            us = graph_us(run, args.launches, args.reps)
            gbs = real * CONV_DIM * 2 * 2 / (us * 1e-6) / 1e9
            rows.append(dict(layout=lname, config=cname, us=round(us, 2), gb_per_s=round(gbs), equal_to_baseline=same))
            print(f"{lname:18s} {cname:22s} {us:8.2f} us {gbs:6.0f} GB/s equal={same}", flush=True)
    path = args.out / "granite_conv_bench.json"
    write_json(path, dict(run_metadata(None, device), rows=rows))
    print("json:", path)


if __name__ == "__main__":
    main()
