"""Granite gated RMSNorm (``gated_rmsnorm``) alone on CUDA: channel blocks, tokens and warps per program.

Rows: 16384 (B=1 L=16384) and 13,357 (the packed left-padded B=8 batch); y bf16 (rows, 3072), the gate read in
place from a (rows, 6448) in_proj output. Each config is timed as a CUDA graph of launches
(``granite_conv_bench.graph_us``), us per launch, with the rate over its 3 x rows x 3072 x 2 bytes. Outputs are
compared with the first config's (the session-3 form: one 4096-wide block per row, a quarter masked): the number
of elements that differ and the largest difference in bf16 ulps, counted on the bit patterns (the sum of squares
is taken in another order). (The session-4 run, results/session4/run8, printed relative difference x 256 as
"ulp": its 1.98 is one ulp.)
Usage (CUDA): PYTHONPATH=src python bench/granite_norm_bench.py --out DIR
"""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from granite_conv_bench import VARLEN_LENGTHS, graph_us  # noqa: E402

from ssmkit.harness.report import run_metadata, write_json  # noqa: E402
from ssmkit.kernels.granite import gated_rmsnorm  # noqa: E402

INTER, IN_PROJ_DIM = 3072, 6448
CONFIGS = {  # name: wrapper options, all spelled out; the first is the session-3 form
    "one_block_4096_t2_w8": dict(block_c=4096, block_t=2, num_warps=8),
    "blocks_1024_t2_w8": dict(block_c=1024, block_t=2, num_warps=8),
    "blocks_1024_t1_w4": dict(block_c=1024, block_t=1, num_warps=4),
    "blocks_1024_t4_w8": dict(block_c=1024, block_t=4, num_warps=8),
    "blocks_512_t2_w8": dict(block_c=512, block_t=2, num_warps=8),
    "blocks_1024_t2_w4": dict(block_c=1024, block_t=2, num_warps=4),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    device = torch.device("cuda")
    gen = torch.Generator().manual_seed(5)
    weight = (1 + 0.1 * torch.randn(INTER, generator=gen)).to(device, torch.bfloat16)
    rows = []
    for name, tokens in (("b1_l16384", 16384), ("varlen_b8_packed", sum(VARLEN_LENGTHS))):
        y = torch.randn(1, tokens, INTER, generator=gen).to(device, torch.bfloat16)
        zx = torch.randn(1, tokens, IN_PROJ_DIM, generator=gen).to(device, torch.bfloat16)
        z = zx[..., :INTER]
        base = None
        for cname, opts in CONFIGS.items():
            def run(opts=opts):
                return gated_rmsnorm(y, z, weight, 1e-5, **opts)
            out = run()
            base = out if base is None else base
            same_sign = (out.float() * base.float()) >= 0
            ulps = torch.where(same_sign, (out.view(torch.int16).int() - base.view(torch.int16).int()).abs(), 0)
            us = graph_us(run, 10, 20)
            row = dict(rows=name, config=cname, us=round(us, 2), gb_per_s=round(3 * tokens * INTER * 2 / us / 1e3),
                       differing=int((out != base).sum()), max_ulps=int(ulps.max()))
            rows.append(row)
            print(f"{name:18s} {cname:24s} {us:8.2f} us {row['gb_per_s']:6d} GB/s differing {row['differing']} "
                  f"(max {row['max_ulps']} ulp)", flush=True)
    path = args.out / "granite_norm_bench.json"
    write_json(path, dict(run_metadata(None, device), rows=rows))
    print("json:", path)


if __name__ == "__main__":
    main()
