"""Issue 6's anchor on this machine: the official state-spaces Mamba-3 SISO Triton kernels beside ssmkit's operator.

The issue's bar (official kernels 3.7-3.9 ms wall, 0.71-0.78 ms GPU per full call; their errors against float64) was
measured on an H200; this script measures both sides in one process on whatever GPU runs it, so the ratio holds on an
H100 too. The official side is `mamba3_siso_combined` (spec [WRAP], §2) from the code `bench/anchor_setup.sh` put in
.anchors/ (never committed), fed the project's inputs in its layout (a leading batch of 1; adt, dt, trap head-major,
made contiguous) and differentiated by autograd with the five cotangents (`full_vjp_by_autograd`; its final_angle is
bf16 and comes back as fp32). The ssmkit side is the public entry with its defaults (a CUDA-graph replay per call).
Per visible case (cases.json, 3 rotating input sets), each side: the 16 results' norm-relative errors against the
float64 full VJP (`mamba3_bench.float64_results`; the official ones should come out near the issue's figures, which
checks the layout mapping), whether two calls give the same bits, the full call's host wall ms (median, the sides
interleaved), the queued GPU ms per call (CUDA events over calls issued back to back) and the profiler's kernel-time
sum per call (overlapped kernels counted twice), and the speedups.
Usage (CUDA): PYTHONPATH=src python bench/mamba3_official_ab.py --out DIR [--cases c1,c5] [--anchor DIR]
--smoke (CPU): the same plumbing with a stand-in for the official op (the fp32 reference behind the official layout)
at a tiny case and without timing, to check this script cheaply.
"""
import argparse
import importlib
import json
import sys
from importlib import resources
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mamba3_ab import interleaved_wall_ms, queued_ms  # noqa: E402
from mamba3_bench import OFFICIAL_ERROR, errors, float64_results, gpu_ms  # noqa: E402

from ssmkit.harness.report import run_metadata, write_json  # noqa: E402
from ssmkit.mamba3.inputs import make_inputs  # noqa: E402
from ssmkit.mamba3.op import mamba3_siso_varlen_joint_states_full_vjp  # noqa: E402
from ssmkit.mamba3.reference import full_vjp_by_autograd, mamba3_siso_reference  # noqa: E402
from ssmkit.mamba3.shapes import CHUNK, COTANGENT_NAMES, INPUT_NAMES, RESULT_NAMES  # noqa: E402

ANCHOR_DIR = Path(__file__).resolve().parent.parent / ".anchors" / "mamba3_official"
ROTATE = 3


def load_official(anchor: Path):
    """``mamba3_siso_combined`` from the anchor directory (bench/anchor_setup.sh) and the revision it came from."""
    if not (anchor / "mamba_ssm").is_dir():
        raise SystemExit(f"no official kernels under {anchor}: run bench/anchor_setup.sh first")
    sys.path.insert(0, str(anchor))
    module = importlib.import_module("mamba_ssm.ops.triton.mamba3.mamba3_siso_combined")
    return module.mamba3_siso_combined, (anchor / "REVISION").read_text().strip()


def official_forward(combined):
    """The project's forward (12 inputs in the project layout -> 5 outputs) through an op with the official contract
    (spec §2: (1, T, ...) per-token tensors, (1, H, T) adt / dt / trap); differentiable where ``combined`` is."""
    def forward(q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens):
        def heads_first(x):
            return x.t().contiguous()[None]

        out, final_angle, final_ssm, final_k, final_v = combined(
            q[None], k[None], v[None], heads_first(adt), heads_first(dt), heads_first(trap), q_bias, k_bias,
            angles[None], d, z[None], chunk_size=CHUNK, return_final_states=True, cu_seqlens=cu_seqlens)
        return out[0], final_angle.float(), final_ssm, final_k, final_v
    return forward


def stand_in_combined(Q, K, V, ADT, DT, Trap, Q_bias, K_bias, Angles, D, Z, chunk_size, return_final_states,
                      cu_seqlens):
    """--smoke's stand-in for the official op: its layout in and out around the fp32 reference (final_angle in
    bf16, as the official kernel path returns it)."""
    out, final_angle, *rest = mamba3_siso_reference(Q[0], K[0], V[0], ADT[0].t(), DT[0].t(), Trap[0].t(), Q_bias,
                                                    K_bias, Angles[0], D, Z[0], cu_seqlens)
    return (out[None], final_angle.bfloat16(), *rest)


def official_call(combined):
    """args dict -> the official op's 16 results in the project's layout and order (forward outputs, 11 gradients)."""
    forward = official_forward(combined)
    return lambda args: full_vjp_by_autograd(forward, *[args[n] for n in INPUT_NAMES],
                                             *[args[n] for n in COTANGENT_NAMES])


def ssmkit_call(args):
    return mamba3_siso_varlen_joint_states_full_vjp(**args)


def measure_case(case: dict, sides: dict, device, timing: bool) -> dict:
    """One case: errors against float64 and determinism per side, then (``timing``) the times and speedups."""
    sets = [make_inputs(case["seqlens"], case["seed"] + r, device=device) for r in range(ROTATE if timing else 1)]
    exact = float64_results(sets[0])
    row = {"case": case["name"], "T": sum(case["seqlens"]), "S": len(case["seqlens"]), "errors": {},
           "deterministic": {}}
    for name, fn in sides.items():
        first, second = fn(sets[0]), fn(sets[0])
        assert len(first) == len(RESULT_NAMES)
        row["errors"][name] = errors(first, exact)
        row["deterministic"][name] = {n: torch.equal(a, b) for n, a, b in zip(RESULT_NAMES, first, second)}
    if timing:
        row["wall_ms"] = dict(zip(sides, interleaved_wall_ms(list(sides.values()), sets)))
        row["queued_ms"] = {name: queued_ms(fn, sets) for name, fn in sides.items()}
        row["gpu_ms"] = {name: gpu_ms(fn, sets) for name, fn in sides.items()}
        row["speedup"] = {kind: row[kind]["official"] / row[kind]["ssmkit"]
                          for kind in ("wall_ms", "queued_ms", "gpu_ms")}
    return row


def report(row: dict) -> str:
    """Lines for one case: times and speedups, then the errors side by side with the issue's official figures."""
    lines = [f"{row['case']} (T={row['T']}, S={row['S']})"]
    if "wall_ms" in row:
        lines.append("  " + "  ".join(f"{kind} {row[kind]['official']:.3f} -> {row[kind]['ssmkit']:.3f} ms "
                                      f"(x{row['speedup'][kind]:.2f})" for kind in ("wall_ms", "queued_ms", "gpu_ms")))
    for side, det in row["deterministic"].items():
        varying = [n for n, same in det.items() if not same]
        lines.append(f"  {side}: repeated calls " + (f"differ in {', '.join(varying)}" if varying else "bit-identical"))
    lines.append(f"  {'result':12s} {'official':>10s} {'ssmkit':>10s} {'issue':>10s}")
    for n in RESULT_NAMES:
        issue = OFFICIAL_ERROR.get(n)
        lines.append(f"  {n:12s} {row['errors']['official'][n]:10.2e} {row['errors']['ssmkit'][n]:10.2e} "
                     + (f"{issue:10.2e}" if issue is not None else f"{'-':>10s}"))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--cases", default="", help="comma-separated case names (default: every visible case)")
    ap.add_argument("--anchor", type=Path, default=ANCHOR_DIR)
    ap.add_argument("--smoke", action="store_true", help="CPU: stand-in official op, tiny case, no timing")
    args = ap.parse_args()
    if args.smoke:
        device, combined, revision = torch.device("cpu"), stand_in_combined, "stand-in (fp32 reference)"
        cases = [{"name": "smoke", "seqlens": [5, 3], "seed": 7}]
    else:
        if not torch.cuda.is_available():
            raise SystemExit("mamba3_official_ab needs a CUDA GPU (or --smoke)")
        if args.out is None:
            ap.error("--out DIR is needed")
        device = torch.device("cuda")
        combined, revision = load_official(args.anchor)
        cases = json.loads(resources.files("ssmkit.mamba3").joinpath("cases.json").read_text())
        if args.cases:
            cases = [c for c in cases if c["name"] in args.cases.split(",")]
    sides = {"official": official_call(combined), "ssmkit": ssmkit_call}
    rows = []
    for i, case in enumerate(cases, 1):
        rows.append(measure_case(case, sides, device, timing=not args.smoke))
        print(f"[{i}/{len(cases)}] " + report(rows[-1]), flush=True)
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            write_json(args.out / "mamba3_official_ab.json",
                       dict(run_metadata(None, device), official_revision=revision, rows=rows))
    if rows and "speedup" in rows[0]:
        for kind in ("wall_ms", "queued_ms", "gpu_ms"):
            ratios = [r["speedup"][kind] for r in rows]
            print(f"speedup over the official kernels, {kind}: {min(ratios):.2f}-{max(ratios):.2f} "
                  f"(geomean {torch.tensor(ratios).log().mean().exp().item():.2f})")


if __name__ == "__main__":
    main()
