"""The decode projections alone: cuBLAS (F.linear) against ``granite_decode_linear`` (GEMV kernel up to 8 rows,
tl.dot kernel above) at the layer's shapes (in_proj 6448 x 1536, out_proj 1536 x 3072, bf16), per batch and
``block_n``; each call timed in a CUDA graph of 20 back-to-back calls (``triton.testing.do_bench_cudagraph``,
median), so that launch gaps between graph nodes are left out and only the kernels' GPU time is compared.

Usage (CUDA): PYTHONPATH=src python bench/granite_decode_linear_bench.py --out DIR [--batches 1,2,8,64]
"""
import argparse
import json
from pathlib import Path

import torch
import torch.nn.functional as F
import triton.testing

from ssmkit.harness.report import run_metadata, write_json
from ssmkit.kernels.granite.ssd_decode import granite_decode_linear

SHAPES = {"in_proj": (6448, 1536), "out_proj": (1536, 3072)}


def graph_us(fn) -> float:
    """Median GPU time of one call in us, 20 calls per captured graph."""
    def twenty():
        for _ in range(20):
            fn()
    return triton.testing.do_bench_cudagraph(twenty, rep=200, return_mode="median") * 1e3 / 20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--batches", default="1,2,8,64")
    args = ap.parse_args()
    device = torch.device("cuda")
    g = torch.Generator(device=device).manual_seed(0)
    rows = []
    for name, (n, k) in SHAPES.items():
        w = (0.02 * torch.randn(n, k, device=device, generator=g)).to(torch.bfloat16)
        for batch in (int(b) for b in args.batches.split(",")):
            x = torch.randn(batch, k, device=device, generator=g).to(torch.bfloat16)
            ref = F.linear(x, w)
            row = {"proj": name, "batch": batch, "cublas_us": graph_us(lambda: F.linear(x, w))}
            for block_n in ((None, 4, 8, 16) if batch <= 8 else (None,)):
                out = granite_decode_linear(x, w, block_n=block_n)
                diff = ((out.double() - ref.double()).norm() / ref.double().norm()).item()
                key = f"triton_bn{block_n or 'default'}"
                row[key + "_us"] = graph_us(lambda b=block_n: granite_decode_linear(x, w, block_n=b))
                row[key + "_rel_diff"] = diff
            rows.append(row)
            print(json.dumps(row), flush=True)
    path = args.out / "granite_decode_linear_bench.json"
    write_json(path, dict(run_metadata(None, device), rows=rows))
    print("json:", path)


if __name__ == "__main__":
    main()
