"""Issue 6's anchor on this machine: the official state-spaces Mamba-3 SISO Triton kernels beside ssmkit's operator.

The issue's bar (official kernels 3.7-3.9 ms wall, 0.71-0.78 ms GPU per full call; their errors against float64) was
measured on an H200; this script measures both sides in one process on whatever GPU runs it, so the ratio holds on an
H100 too. The official side is `mamba3_siso_combined` (spec [WRAP], §2) from the code `bench/anchor_setup.sh` put in
.anchors/ (never committed), fed the project's inputs in its layout (a leading batch of 1; adt, dt, trap head-major,
contiguous) and differentiated by autograd with the five cotangents (its final_angle is bf16, so that cotangent is
too), its results returned as views in the project's layout. The ssmkit side is the public entry with its defaults
(a CUDA-graph replay per call).
Per visible case (cases.json, 3 rotating input sets), each side: the 16 results' norm-relative errors against the
float64 full VJP (`mamba3_bench.float64_results`; the official ones should come out near the issue's figures, which
checks the layout mapping), whether two calls give the same bits, the full call's host wall ms (median, the sides
interleaved), the queued GPU ms per call (CUDA events over calls issued back to back; the median of rounds in
alternating order, `mamba3_bench.interleaved_queued_ms`) and the profiler's kernel-time sum per call (overlapped
kernels counted twice), and the speedups.
The official kernels autotune on their first call (about 234 configs compiled, minutes) and keep the chosen config
for every later case (their tuning keys hold no length: the first case's shape tunes them); the JSON records what
they chose (``official_tuned_configs``), and ``--pin JSON`` makes a later run use those configs without tuning;
``--precompile N`` first compiles every config in N processes at once (``precompile``), so the tuning fits a call.
The official side's inputs and cotangents are put in its layout once per input set, outside the timed calls.
Usage (CUDA): PYTHONPATH=src python bench/mamba3_official_ab.py --out DIR [--cases c1,c5] [--anchor DIR] [--pin JSON]
    [--precompile 14]
--smoke (CPU): the same plumbing with a stand-in for the official op (the fp32 reference behind the official layout)
at a tiny case and without timing, to check this script cheaply.
"""
import argparse
import importlib
import json
import subprocess
import sys
import time
from pathlib import Path

import torch
from triton import Config
from triton.runtime.autotuner import Autotuner

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mamba3_ab import interleaved_wall_ms  # noqa: E402
from mamba3_bench import (  # noqa: E402
    OFFICIAL_ERROR, ROTATE, errors, float64_results, gpu_ms, interleaved_queued_ms, named_cases)

from ssmkit.harness.report import run_metadata, write_json  # noqa: E402
from ssmkit.mamba3.inputs import make_inputs  # noqa: E402
from ssmkit.mamba3.op import mamba3_siso_varlen_joint_states_full_vjp  # noqa: E402
from ssmkit.mamba3.reference import mamba3_siso_reference  # noqa: E402
from ssmkit.mamba3.shapes import CHUNK, COTANGENT_NAMES, INPUT_NAMES, RESULT_NAMES  # noqa: E402

ANCHOR_DIR = Path(__file__).resolve().parent.parent / ".anchors" / "mamba3_official"
OFFICIAL_MODULES = ("mamba3_siso_fwd", "mamba3_siso_bwd", "angle_dt")  # where its autotuned kernels live


def load_official(anchor: Path):
    """``mamba3_siso_combined`` from the anchor directory (bench/anchor_setup.sh), the revision it came from, and
    its autotuned kernels (kernel name -> triton Autotuner)."""
    if not (anchor / "mamba_ssm").is_dir():
        raise SystemExit(f"no official kernels under {anchor}: run bench/anchor_setup.sh first")
    sys.path.insert(0, str(anchor))
    package = "mamba_ssm.ops.triton.mamba3"
    module = importlib.import_module(f"{package}.mamba3_siso_combined")
    modules = [importlib.import_module(f"{package}.{m}") for m in OFFICIAL_MODULES]
    tuners = {name: obj for m in modules for name, obj in vars(m).items() if isinstance(obj, Autotuner)}
    return module.mamba3_siso_combined, (anchor / "REVISION").read_text().strip(), tuners


def tuned_configs(tuners: dict) -> dict:
    """What the official autotuning chose, per kernel: its best config for each key it tuned (JSON-ready)."""
    return {name: [{"key": repr(key), "kwargs": cfg.kwargs, "num_warps": cfg.num_warps, "num_stages": cfg.num_stages,
                    "maxnreg": cfg.maxnreg} for key, cfg in tuner.cache.items()] for name, tuner in tuners.items()}


def pin_configs(tuners: dict, tuned: dict) -> list[str]:
    """Make each official kernel that was tuned for one key (``tuned_configs``' output) use that config without
    tuning again (its autotuning compiles each of 27-81 configs on the first call: minutes); returns the names."""
    pinned = []
    for name, records in tuned.items():
        if name in tuners and len(records) == 1:
            r = records[0]
            tuners[name].configs = [Config(r["kwargs"], num_warps=r["num_warps"], num_stages=r["num_stages"],
                                           maxnreg=r["maxnreg"])]
            pinned.append(name)
    return pinned


def keep_config_share(tuners: dict, part: int, parts: int) -> None:
    """Leave each official kernel ``part``'s share of its autotuning configs (every parts-th from ``part``), at least
    two of them (the autotuner skips a config that fails to compile or launch only when it has others: a process
    left one bad config would die before its later kernels' shares), so ``parts`` processes together compile every
    config (``precompile``)."""
    for tuner in tuners.values():
        configs = tuner.configs
        share = configs[part::parts]
        extra = [configs[(part + k) % len(configs)] for k in range(len(configs))]
        tuner.configs = (share + [c for c in extra if c not in share])[:max(2, len(share))]


def precompile(parts: int, case: dict, anchor: Path) -> None:
    """Compile every official autotuning config before the autotuning runs: ``parts`` processes (this script with
    ``--precompile-part``) each run one official call with its share of the configs (``keep_config_share``), which
    Triton compiles into its on-disk cache; the autotuning in this process then loads them instead of compiling
    ~234 configs one after another (minutes: more than a device call allows), and still times every config here,
    on an idle GPU, so it chooses as the official autotuner does. A part that fails only costs its share's time."""
    start = time.perf_counter()
    script = Path(__file__).resolve()
    workers = [subprocess.Popen([sys.executable, str(script), "--precompile-part", f"{i}/{parts}", "--cases",
                                 case["name"], "--anchor", str(anchor)]) for i in range(parts)]
    codes = [w.wait() for w in workers]
    print(f"official configs precompiled in {parts} processes: {time.perf_counter() - start:.1f} s, exit codes "
          f"{sorted(set(codes))}", flush=True)


def official_layout(args: dict) -> tuple[list, list]:
    """The 12 inputs and 5 cotangents of ``args`` in the official layout (spec §2: a batch of 1, adt / dt / trap
    head-major; final_angle's cotangent in bf16, the dtype of that output), made once per input set so that a timed
    call does not pay for the project's layout."""
    def heads_first(x):
        return x.t().contiguous()[None]

    q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu = (args[n] for n in INPUT_NAMES)
    inputs = [q[None], k[None], v[None], heads_first(adt), heads_first(dt), heads_first(trap), q_bias, k_bias,
              angles[None], d, z[None], cu]
    dout, dfa, dfs, dfk, dfv = (args[n] for n in COTANGENT_NAMES)
    return inputs, [dout[None], dfa.to(torch.bfloat16), dfs, dfk, dfv]


def stand_in_combined(Q, K, V, ADT, DT, Trap, Q_bias, K_bias, Angles, D, Z, chunk_size, return_final_states,
                      cu_seqlens):
    """--smoke's stand-in for the official op: its layout in and out around the fp32 reference (final_angle in
    bf16, as the official kernel path returns it)."""
    out, final_angle, *rest = mamba3_siso_reference(Q[0], K[0], V[0], ADT[0].t(), DT[0].t(), Trap[0].t(), Q_bias,
                                                    K_bias, Angles[0], D, Z[0], cu_seqlens)
    return (out[None], final_angle.bfloat16(), *rest)


def official_call(combined):
    """args dict -> the official op's 16 results (forward outputs, 11 gradients by autograd with the 5 cotangents)
    as views in the project's layout and order; the official-layout copies of each input set are made on its first
    call (``official_layout``) and kept."""
    prepared = {}

    def run(args):
        if id(args) not in prepared:
            prepared[id(args)] = (args, *official_layout(args))  # (args kept: its id stays its own)
        _, inputs, cotangents = prepared[id(args)]
        leaves = [x.detach().requires_grad_(True) for x in inputs[:11]]
        with torch.enable_grad():
            outputs = combined(*leaves, chunk_size=CHUNK, return_final_states=True, cu_seqlens=inputs[11])
            grads = torch.autograd.grad(outputs, leaves, grad_outputs=cotangents)
        out, final_angle, final_ssm, final_k, final_v = (o.detach() for o in outputs)
        dq, dk, dv, dadt, ddt, dtrap, dq_bias, dk_bias, dangles, dd, dz = grads
        return (out[0], final_angle, final_ssm, final_k, final_v, dq[0], dk[0], dv[0], dadt[0].t(), ddt[0].t(),
                dtrap[0].t(), dq_bias, dk_bias, dangles[0], dd, dz[0])
    return run


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
        row["queued_ms"] = dict(zip(sides, interleaved_queued_ms(list(sides.values()), sets)[0]))
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
    ap.add_argument("--pin", type=Path, default=None,
                    help="a JSON this script wrote: the official kernels take the configs its autotuning chose there")
    ap.add_argument("--precompile", type=int, default=0,
                    help="compile the official autotuning configs in this many processes first (``precompile``)")
    ap.add_argument("--precompile-part", default=None, help=argparse.SUPPRESS)  # (I/N: one precompile process)
    ap.add_argument("--smoke", action="store_true", help="CPU: stand-in official op, tiny case, no timing")
    args = ap.parse_args()
    tuners, pinned = {}, []
    if args.smoke:
        device, combined, revision = torch.device("cpu"), stand_in_combined, "stand-in (fp32 reference)"
        cases = [{"name": "smoke", "seqlens": [5, 3], "seed": 7}]
    else:
        if not torch.cuda.is_available():
            raise SystemExit("mamba3_official_ab needs a CUDA GPU (or --smoke)")
        if args.out is None and args.precompile_part is None:
            ap.error("--out DIR is needed")
        device = torch.device("cuda")
        combined, revision, tuners = load_official(args.anchor)
        if args.pin is not None:
            pinned = pin_configs(tuners, json.loads(args.pin.read_text())["official_tuned_configs"])
            print(f"official kernels pinned to {args.pin}'s tuned configs: {', '.join(pinned)}", flush=True)
            if len(pinned) < len(tuners):
                print(f"warning: {len(tuners) - len(pinned)} official kernels not pinned (no single tuned config in "
                      f"{args.pin}): {', '.join(sorted(set(tuners) - set(pinned)))} will tune", flush=True)
        try:
            cases = named_cases(args.cases)
        except ValueError as exc:
            ap.error(str(exc))
        if args.precompile_part is not None:  # one precompile process: one official call with its share, then exit
            part, parts = map(int, args.precompile_part.split("/"))
            keep_config_share(tuners, part, parts)
            official_call(combined)(make_inputs(cases[0]["seqlens"], cases[0]["seed"], device=device))
            return
        if args.precompile > 1 and not pinned:
            precompile(args.precompile, cases[0], args.anchor)
    sides = {"official": official_call(combined), "ssmkit": ssmkit_call}
    rows = []
    for i, case in enumerate(cases, 1):
        rows.append(measure_case(case, sides, device, timing=not args.smoke))
        print(f"[{i}/{len(cases)}] " + report(rows[-1]), flush=True)
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            write_json(args.out / "mamba3_official_ab.json",
                       dict(run_metadata(None, device), official_revision=revision, official_pinned=pinned,
                            official_tuned_configs=tuned_configs(tuners), rows=rows))
    if rows and "speedup" in rows[0]:
        for kind in ("wall_ms", "queued_ms", "gpu_ms"):
            ratios = [r["speedup"][kind] for r in rows]
            print(f"speedup over the official kernels, {kind}: {min(ratios):.2f}-{max(ratios):.2f} "
                  f"(geomean {torch.tensor(ratios).log().mean().exp().item():.2f})")


if __name__ == "__main__":
    main()
