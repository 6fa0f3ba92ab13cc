"""GPU time per forward kernel of the Mamba-3 SISO forward on one long sequence.

Per length: torch.profiler's per-kernel split over PROFILED_CALLS calls (forward only, without validation or
saving, the rotate kernel and the angle-carry kernel on a side stream as the full-VJP call runs them): how each
kernel grows with one sequence's chunk count, the serial ones (state passing, angle carry) among them. (Until
session 44 it compared the rotate kernel's two forms, reading the passing's carry or walking it itself, quadratic in
the chunk count: bench/mamba3/NOTES.md "Session 14".) ``--bwd``: also the backward's per-kernel split from the
forward's saved tensors.
Writes ``OUT/mamba3_long_fwd.json``.
Usage (CUDA): PYTHONPATH=src python bench/mamba3_long_fwd.py --out DIR [--lengths 8192,32768,131072] [--bwd]
"""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mamba3_bench import gpu_kernel_split  # noqa: E402

from ssmkit.harness.report import run_metadata, write_json  # noqa: E402
from ssmkit.kernels.mamba3.bwd import mamba3_siso_bwd  # noqa: E402
from ssmkit.kernels.mamba3.fwd import mamba3_siso_fwd  # noqa: E402
from ssmkit.mamba3.inputs import make_inputs  # noqa: E402
from ssmkit.mamba3.shapes import COTANGENT_NAMES, INPUT_NAMES  # noqa: E402


def _report(length: int, what: str, split: dict) -> dict:
    """Print one pass's per-kernel split (ms, longest first) and return its row."""
    print(f"T={length:7d} {what} {sum(split.values()):.3f} ms: " + ", ".join(
        f"{k[:22]} {v:.3f}" for k, v in sorted(split.items(), key=lambda kv: -kv[1])), flush=True)
    return {"tokens": length, "kernels_ms": split, "total_ms": sum(split.values())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--lengths", default="8192,32768,131072")
    parser.add_argument("--bwd", action="store_true", help="also split the backward's kernels")
    opts = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("mamba3_long_fwd.py needs a CUDA GPU")
    rows = []
    for length in (int(x) for x in opts.lengths.split(",")):
        args = make_inputs([length], seed=length, device="cuda")
        inputs = [args[n] for n in INPUT_NAMES]
        side = torch.cuda.Stream()
        rows.append(_report(length, "forward", gpu_kernel_split(
            lambda a: mamba3_siso_fwd(*a, save_for_backward=False, validate=False, rotate_stream=side), inputs)))
        if opts.bwd:
            saved = mamba3_siso_fwd(*inputs)[-1]
            cots = [args[n] for n in COTANGENT_NAMES]
            split = gpu_kernel_split(lambda a: mamba3_siso_bwd(*a, saved, *cots), inputs)
            rows.append(dict(_report(length, "backward", split), backward=True))
            del saved, cots
        del args, inputs
        torch.cuda.empty_cache()
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "mamba3_long_fwd.json", {"meta": run_metadata(sys.argv, "cuda"), "rows": rows})


if __name__ == "__main__":
    main()
