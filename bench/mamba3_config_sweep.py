"""Sweep of Mamba3BwdConfig launch options (or, with --fwd, Mamba3FwdConfig's), one process: per config the 11
gradients (the forward's results and saved tensors) against the default config's (norm-relative difference; 0 =
bit-identical), the GPU time of each backward (forward) kernel (torch.profiler) and of the whole backward
(forward), for each visible case asked for.

Usage (CUDA): PYTHONPATH=src python bench/mamba3_config_sweep.py --out DIR [--cases c1_four_mixed,...]
    [--configs '[{"dstate_warps": 8}, ...]']   (fields of Mamba3BwdConfig; the default config is always first)
    [--fwd --configs '[{"scan_warps": 4}, ...]']   (fields of Mamba3FwdConfig)
"""
import argparse
import json
import sys
from importlib import resources
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mamba3_bench import gpu_kernel_split  # noqa: E402

from ssmkit.harness.report import run_metadata, write_json  # noqa: E402
from ssmkit.kernels.mamba3.bwd import DEFAULT_BWD_CONFIG, mamba3_siso_bwd  # noqa: E402
from ssmkit.kernels.mamba3.fwd import DEFAULT_FWD_CONFIG, mamba3_siso_fwd  # noqa: E402
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
    ap.add_argument("--fwd", action="store_true", help="sweep Mamba3FwdConfig instead")
    args = ap.parse_args()
    device = torch.device("cuda")
    default = DEFAULT_FWD_CONFIG if args.fwd else DEFAULT_BWD_CONFIG
    configs = [default] + [default._replace(**c) for c in json.loads(args.configs)]
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
                    if args.fwd:
                        *outs, fwd_saved = mamba3_siso_fwd(*inputs, config=cfg)
                        return (*outs, *fwd_saved)
                    return mamba3_siso_bwd(*inputs, saved, *cots, config=cfg)
                grads = bwd(None)
                torch.cuda.synchronize()
                if ref is None:
                    ref = grads
                names = (*RESULT_NAMES[:5], *saved._fields) if args.fwd else RESULT_NAMES[-len(grads):]
                diff = {n: ((g.double() - r.double()).norm() / r.double().norm().clamp_min(1e-30)).item()
                        for n, g, r in zip(names, grads, ref)
                        # (slot-indexed: unwritten slots are stale)
                        if n not in ("chunk_states", "chunk_scalars", "masked_scores")}
                split = gpu_kernel_split(bwd, None)
                total = "fwd_gpu_ms" if args.fwd else "bwd_gpu_ms"
                row = {"case": name, "config": cfg._asdict(), "kernels_ms": split, total: sum(split.values()),
                       "vs_default": diff}
                rows.append(row)
                kernels = ", ".join(f"{k[:22]} {v:.3f}" for k, v in sorted(split.items(), key=lambda kv: -kv[1]))
                print(f"{name:22s} {json.dumps(cfg._asdict())}: {total} {row[total]:.3f} ({kernels}), max diff "
                      f"{max(diff.values()):.1e} ({max(diff, key=diff.get)})", flush=True)
    path = args.out / ("mamba3_fwd_sweep.json" if args.fwd else "mamba3_bwd_sweep.json")
    write_json(path, dict(run_metadata(None, device), rows=rows))
    print("json:", path)


if __name__ == "__main__":
    main()
