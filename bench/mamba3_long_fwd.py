"""GPU time per forward kernel of the Mamba-3 SISO forward on one long sequence, both forms of the angle carry.

The rotate kernel either reads the angle carry the state passing stored (``walk_carry=False``, the direct path) or
walks the earlier chunks' angle sums itself (``walk_carry=True``, the graph's form: chunk c walks c chunks, so its
work grows with the square of a sequence's chunk count; ``fwd.ROTATE_WALK_MAX_TOKENS`` keeps it to short inputs).
Per length: the two forms' results compared (0 = bit-identical), then torch.profiler's per-kernel split over
PROFILED_CALLS calls of each (forward only, inputs validated once, no autograd). ``--bwd``: also the backward's
per-kernel split from the direct path's saved tensors (how each backward kernel grows with one sequence's length).
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
        results = {}
        for walk in (False, True):
            outs = mamba3_siso_fwd(*inputs, walk_carry=walk, save_for_backward=False)
            results[walk] = list(outs[:5])
        same = all(torch.equal(a, b) for a, b in zip(results[False], results[True]))
        for walk in (False, True):
            split = gpu_kernel_split(lambda a: mamba3_siso_fwd(*a, walk_carry=walk, save_for_backward=False,
                                                               validate=False), inputs)
            row = {"tokens": length, "walk_carry": walk, "bit_identical_forms": same,
                   "kernels_ms": split, "total_ms": sum(split.values())}
            rows.append(row)
            rotate = sum(v for k, v in split.items() if "rotate" in k)
            passing = sum(v for k, v in split.items() if "passing" in k)
            print(f"T={length:7d} walk={walk!s:5} same={same} rotate {rotate:.3f} passing {passing:.3f} "
                  f"forward {row['total_ms']:.3f} ms", flush=True)
        if opts.bwd:
            saved = mamba3_siso_fwd(*inputs)[-1]
            cots = [args[n] for n in COTANGENT_NAMES]
            split = gpu_kernel_split(lambda a: mamba3_siso_bwd(*a, saved, *cots), inputs)
            rows.append({"tokens": length, "backward": True, "kernels_ms": split, "total_ms": sum(split.values())})
            print(f"T={length:7d} backward {sum(split.values()):.3f} ms: " + ", ".join(
                f"{k[:22]} {v:.3f}" for k, v in sorted(split.items(), key=lambda kv: -kv[1])), flush=True)
            del saved, cots
        del args, inputs, results
        torch.cuda.empty_cache()
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "mamba3_long_fwd.json", {"meta": run_metadata(sys.argv, "cuda"), "rows": rows})


if __name__ == "__main__":
    main()
