"""The decode projections alone: cuBLAS (F.linear) against ``granite_decode_linear`` (the GEMV kernel up to 8 rows,
the split-K kernel over a sweep of block_n x split x block_k) at the layer's shapes (in_proj 6448 x 1536,
out_proj 1536 x 3072, bf16), per batch. Each call is timed in a CUDA graph of 20 back-to-back calls
(``triton.testing.do_bench_cudagraph``, median), so that launch gaps between graph nodes are left out and only the
kernels' GPU time is compared. ``--rotate R``: the 20 calls cycle through R copies of the weight (R x 19.8 MB for
in_proj), so that with R >= 4 the weights come from HBM, not from the 50 MB L2 (R = 1: the same weight every call,
L2-resident, as a layer's repeated decode steps of one layer may see it). Each result is checked against cuBLAS
(norm-relative difference, bf16 rounding level expected).

Usage (CUDA): PYTHONPATH=src python bench/granite_decode_linear_bench.py --out DIR [--batches 1,8,64] [--rotate 4]
"""
import argparse
import itertools
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
import triton.testing

from ssmkit.harness.report import run_metadata, write_json
from ssmkit.kernels.granite.decode_linear import GEMV_MAX_ROWS, granite_decode_linear

SHAPES = {"in_proj": (6448, 1536), "out_proj": (1536, 3072)}
# split-K sweep per projection: block_n, split, block_k
SWEEP = {"in_proj": list(itertools.product((16, 32, 64), (1, 2, 3, 4), (128, 256))),
         "out_proj": list(itertools.product((16, 32), (2, 4, 6, 8), (128, 256)))}


def graph_us(fn, rotate: int) -> float:
    """Median GPU time of one call in us, 20 calls per captured graph, call i on weight copy i % rotate."""
    def twenty():
        for i in range(20):
            fn(i % rotate)
    return triton.testing.do_bench_cudagraph(twenty, rep=100, return_mode="median") * 1e3 / 20


def rel_diff(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--batches", default="1,8,64")
    ap.add_argument("--rotate", type=int, default=4)
    args = ap.parse_args()
    device = torch.device("cuda")
    g = torch.Generator(device=device).manual_seed(0)
    rows = []
    for name, (n, k) in SHAPES.items():
        ws = [(0.02 * torch.randn(n, k, device=device, generator=g)).to(torch.bfloat16) for _ in range(args.rotate)]
        for batch in (int(b) for b in args.batches.split(",")):
            x = torch.randn(batch, k, device=device, generator=g).to(torch.bfloat16)
            ref = F.linear(x, ws[0])
            row = {"proj": name, "batch": batch, "rotate": args.rotate,
                   "cublas_us": graph_us(lambda i: F.linear(x, ws[i]), args.rotate)}
            if batch <= GEMV_MAX_ROWS:
                row["gemv_rel_diff"] = rel_diff(granite_decode_linear(x, ws[0], kernel="gemv"), ref)
                row["gemv_us"] = graph_us(lambda i: granite_decode_linear(x, ws[i], kernel="gemv"), args.rotate)
            for block_n, split, block_k in SWEEP[name]:
                if split > triton.cdiv(k, block_k):
                    continue
                counters = torch.zeros(triton.cdiv(n, block_n), device=device, dtype=torch.int32)
                kw = dict(kernel="splitk", block_n=block_n, split=split, block_k=block_k, num_stages=3,
                          counters=counters)
                key = f"splitk_bn{block_n}_s{split}_bk{block_k}"
                row[key + "_rel_diff"] = rel_diff(granite_decode_linear(x, ws[0], **kw), ref)
                row[key + "_us"] = graph_us(lambda i, kw=kw: granite_decode_linear(x, ws[i], **kw), args.rotate)
                assert not counters.any(), key
            ranked = sorted((v, key[:-3]) for key, v in row.items() if key.startswith("splitk") and key.endswith("_us"))
            row["best_splitk"] = ranked[0][1]
            rows.append(row)
            print(f"{name} B={batch} rotate {args.rotate}: cublas {row['cublas_us']:.2f}  gemv "
                  f"{row.get('gemv_us', float('nan')):.2f}  best split-K: "
                  + ", ".join(f"{key[7:]} {v:.2f} ({row[key + '_rel_diff']:.1e})" for v, key in ranked[:4]) + " us",
                  flush=True)
    path = args.out / f"granite_decode_linear_bench_r{args.rotate}.json"
    write_json(path, dict(run_metadata(None, device), rows=rows))
    print("json:", path)


if __name__ == "__main__":
    main()
