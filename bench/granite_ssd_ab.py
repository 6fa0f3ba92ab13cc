"""Same-process A/B of the Granite chunked SSD (``ssd_chunked_prefill``): working tree against baseline copies.

Each baseline directory holds an ``ssd_prefill.py`` (from another commit, or a hybrid), loaded as its own module.
All run the layer's settings (bf16 operands, cb_spread, final state written) on the same inputs, each with its
default launch options and with those of VARIANTS (``--variants all``: every module; default: the working tree
only): B=1 at L = 16384 and 4096, and the left-padded B=8 bench batch in the packed varlen layout. y and the final
state are compared with the first baseline's bit for bit (DIFFERS, and the norm-relative difference of y); each is
timed as a CUDA graph of launches (``granite_conv_bench.graph_us``), us per launch, and profiled per kernel
(``granite_prefill_bench.profile_kernels``: chunk state / state passing / chunk scan us, or prep / fused for the
fused-state form (the default on the packed batch), eager launches). Variants a baseline's ``ssd_chunked_prefill``
has no keywords for are left out for it.
Usage (CUDA): PYTHONPATH=src python bench/granite_ssd_ab.py --baseline DIR [DIR ...] --out DIR
"""
import argparse
import importlib.util
import inspect
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from granite_conv_bench import VARLEN_L, VARLEN_LENGTHS, graph_us  # noqa: E402
from granite_prefill_bench import profile_kernels  # noqa: E402

from ssmkit.harness.granite_run import default_slice  # noqa: E402
from ssmkit.harness.report import run_metadata, write_json  # noqa: E402
from ssmkit.kernels.granite import ssd_prefill as new_ssd  # noqa: E402
from ssmkit.kernels.granite.conv1d import packed_layout_rows  # noqa: E402


# A ``launch`` key given replaces that kernel's defaults, which on CUDA include the register caps for every unmasked
# layout, padded or packed (ssd_launch_options; the padded one only until session 10). (Session 4: stage counts of
# the chunk-state kernel; session 5: register caps, so that 4 CTAs of 4 warps fit an SM: 168 (scan) and 145
# (state) registers allowed 3; the state kernel's 74 KB of shared memory at 3 stages also does. Session 5's run 4
# ran before the caps became a default: its "new" side is Triton's defaults there.)
# A variant is a dict of extra ssd_chunked_prefill keywords (``launch``: per-kernel launch options). Earlier
# sessions' sets: git history (session 8's run 3: two heads per scan program sharing the C and C.B^T loads, bf16 C.B^T
# blocks; both removed after it, bench/granite/NOTES.md "Session 8").
# Session 10: the register caps on every layout (the packed scan dropped from 168 to 143 registers with the factored
# off-diagonal decay); state-passing programs of 256 and 1024 state elements.
_KERNELS = {"chunk_state": "state", "state_pass": "pass", "chunk_scan": "scan", "chunk_prep": "prep",
            "state_fused": "fused"}
_CAP = {"scan": {"maxnreg": 128}, "state": {"maxnreg": 128, "num_stages": 2}}
# (fused_state=False: these vary the chunk-state / passing form, which is not the default on the packed batch)
VARIANTS = {"triton_defaults": dict(launch={"scan": {}, "state": {}}, fused_state=False),
            "scan_capped": dict(launch={"scan": _CAP["scan"]}, fused_state=False),
            "state_capped": dict(launch={"state": _CAP["state"]}, fused_state=False),
            "capped_everywhere": dict(launch=_CAP, fused_state=False),
            "block_s_256": dict(block_s=256, fused_state=False), "block_s_1024": dict(block_s=1024, fused_state=False)}
# Session 11: chunk states and their passing in one sequential kernel (fused_state), per state columns and stages
VARIANTS.update({f"fused_n{n}_s{st}": dict(fused_state=True, block_n=n, fused_stages=st)
                 for n, st in ((16, 2), (32, 1), (32, 2), (32, 3), (64, 2))})
# Session 22: 8 warps for the chunk-state or the scan kernel under the same caps (two programs per SM instead of
# four: at L = 4096 the chunk state's 768 programs fill 1.45 rounds of 528 at 4 warps, 2.9 of 264 at 8)
VARIANTS.update({f"{k}_8_warps": dict(launch={k: {**_CAP[k], "num_warps": 8}}, fused_state=False)
                 for k in ("state", "scan")})
# Session 23's state_n64 / state_n32 (chunk-state programs over 64 or 32 state columns, 2b73080): slower at every
# size, so removed with the parameter (bench/granite/NOTES.md "Session 23").


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", type=Path, nargs="+", required=True)
    ap.add_argument("--variants", default="new",
                    help="new: the working tree's module with every variant; all: every module with every variant; "
                         "or comma-separated variant names, for the working tree's module")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--launches", type=int, default=10)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    chosen = VARIANTS if args.variants in ("new", "all") else {n: VARIANTS.get(n) for n in args.variants.split(",")}
    unknown = [n for n, v in chosen.items() if v is None]
    if unknown:
        raise SystemExit(f"unknown variants {unknown}; known: {sorted(VARIANTS)}")
    device = torch.device("cuda")
    modules = []
    for i, directory in enumerate(args.baseline):
        spec = importlib.util.spec_from_file_location(f"ab_baseline_ssd_{i}", directory / "ssd_prefill.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules.append((f"{i}:{directory.name}", module))  # (an index: two directories may share a name)
    modules.append(("new", new_ssd))
    sl = default_slice()
    cfg = sl.config
    params = {k: sl.mamba[k].to(device, torch.bfloat16) for k in ("dt_bias", "A_log", "D")}
    conv_dim = cfg.conv_dim
    gen = torch.Generator().manual_seed(3)
    layouts = {}
    for seqlen in (16384, 4096):
        layouts[f"b1_l{seqlen}"] = (seqlen, 1, {})
    rows = packed_layout_rows(torch.tensor(VARLEN_LENGTHS, device=device), VARLEN_L)
    layouts["varlen_b8_packed"] = (sum(VARLEN_LENGTHS), len(VARLEN_LENGTHS), dict(packed_rows=rows, seqlen=VARLEN_L))
    results = []
    for lname, (tokens, batch, layout) in layouts.items():
        shape = (tokens,) if layout else (1, tokens)
        xbc = (0.5 * torch.randn(*shape, conv_dim, generator=gen)).to(device, torch.bfloat16)
        dt_raw = torch.randn(*shape, cfg.num_heads, generator=gen).to(device, torch.bfloat16)
        outs, kernel_us = {}, {}
        sides = []
        for mname, module in modules:
            sides.append((mname, module, {}))
            if args.variants == "all" or module is new_ssd:
                known = inspect.signature(module.ssd_chunked_prefill).parameters  # (older files lack newer keywords)
                sides += [(f"{mname}+{n}", module, v) for n, v in chosen.items() if set(v) <= set(known)]
        for side, module, extra in sides:
            state = torch.empty(batch, cfg.num_heads, cfg.head_dim, cfg.d_state, device=device)

            def run(module=module, state=state, extra=extra):
                return module.ssd_chunked_prefill(xbc, dt_raw, params["dt_bias"], params["A_log"], params["D"],
                                                  cfg.chunk_size, ssm_state_out=state, cb_spread=True, **layout,
                                                  **extra)
            y = run()
            outs[side] = (y, state.clone(), graph_us(run, args.launches, args.reps))
            kernel_us[side] = {label: round(us, 2) for name, us in profile_kernels(run, calls=10).items()
                               for key, label in _KERNELS.items() if key in name}
        ref_y, ref_state = outs[modules[0][0]][:2]
        row = dict(layout=lname, us={side: round(o[2], 2) for side, o in outs.items()},
                   equal={side: bool(torch.equal(o[0], ref_y) and torch.equal(o[1], ref_state))
                          for side, o in outs.items()},
                   y_rel_diff={side: ((o[0].double() - ref_y.double()).norm() / ref_y.double().norm()).item()
                               for side, o in outs.items()},
                   kernel_us=kernel_us)
        results.append(row)
        print(f"{lname:18s} " + "  ".join(
            f"{side} {us:.2f}{'' if row['equal'][side] else ' (DIFFERS %.1e)' % row['y_rel_diff'][side]} ["
            + " ".join(f"{k} {v}" for k, v in kernel_us[side].items()) + "]"
            for side, us in row["us"].items()) + " us", flush=True)
    path = args.out / "granite_ssd_ab.json"
    write_json(path, dict(run_metadata(None, device), rows=results))
    print("json:", path)


if __name__ == "__main__":
    main()
