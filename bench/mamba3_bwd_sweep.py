"""Sweep of Mamba3BwdConfig launch options, one process: per config the 11 gradients against the default config's
(norm-relative difference; 0 = bit-identical), the GPU time of each backward kernel (torch.profiler) and of the
whole backward, for each visible case asked for.

Usage (CUDA): PYTHONPATH=src python bench/mamba3_bwd_sweep.py --out DIR [--cases c1_four_mixed,...]
    [--configs '[{"dstate_warps": 8}, ...]']   (fields of Mamba3BwdConfig; the default config is always first)
"""
import argparse
import json
import sys
from importlib import resources
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mamba3_bench import gpu_kernel_split  # noqa: E402

from ssmkit.harness.report import run_metadata  # noqa: E402
from ssmkit.kernels.mamba3.bwd import DEFAULT_BWD_CONFIG, mamba3_siso_bwd  # noqa: E402
from ssmkit.kernels.mamba3.fwd import mamba3_siso_fwd  # noqa: E402
from ssmkit.mamba3.inputs import make_inputs  # noqa: E402
from ssmkit.mamba3.shapes import COTANGENT_NAMES, INPUT_NAMES, RESULT_NAMES  # noqa: E402

# (Session 5 ran this script at commit 20cf596 with the chain split into state blocks, fields since removed:
# results/session5/run1/mamba3_bwd_sweep.json.)
DEFAULT_CONFIGS = [
    {"dstate_warps": 8},
    {"num_warps": 8},
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--cases", default="c1_four_mixed,c4_short_and_longest")
    ap.add_argument("--configs", default=json.dumps(DEFAULT_CONFIGS))
    args = ap.parse_args()
    device = torch.device("cuda")
    configs = [DEFAULT_BWD_CONFIG] + [DEFAULT_BWD_CONFIG._replace(**c) for c in json.loads(args.configs)]
    cases = {c["name"]: c for c in json.loads(resources.files("ssmkit.mamba3").joinpath("cases.json").read_text())}
    rows = []
    with torch.no_grad():
        for name in args.cases.split(","):
            case = cases[name]
            a = make_inputs(case["seqlens"], case["seed"], device=device)
            inputs = [a[n] for n in INPUT_NAMES]
            cots = [a[n] for n in COTANGENT_NAMES]
            saved = mamba3_siso_fwd(*inputs)[-1]
            ref = None
            for cfg in configs:
                def bwd(_a, cfg=cfg):
                    return mamba3_siso_bwd(*inputs, saved, *cots, config=cfg)
                grads = bwd(None)
                torch.cuda.synchronize()
                if ref is None:
                    ref = grads
                diff = {n: ((g.double() - r.double()).norm() / r.double().norm().clamp_min(1e-30)).item()
                        for n, g, r in zip(RESULT_NAMES[-len(grads):], grads, ref)}
                split = gpu_kernel_split(bwd, None)
                row = dict(case=name, config=cfg._asdict(), kernels_ms=split, bwd_gpu_ms=sum(split.values()),
                           vs_default=diff)
                rows.append(row)
                chain = sum(v for k, v in split.items() if "dstate" in k)
                print(f"{name:22s} {json.dumps(cfg._asdict())}: "
                      f"dS chain {chain:.3f} ms, bwd {row['bwd_gpu_ms']:.3f} ms, max diff "
                      f"{max(diff.values()):.1e} ({max(diff, key=diff.get)})", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "mamba3_bwd_sweep.json"
    path.write_text(json.dumps(dict(run_metadata(None, device), rows=rows), indent=1))
    print("json:", path)


if __name__ == "__main__":
    main()
