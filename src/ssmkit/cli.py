"""Command line: ``ssmkit granite verify|bench|judge``, ``ssmkit mamba3 selfcheck|judge``, ``ssmkit export``.

Parsing only; each command lives in its harness module (imported when the command runs):
- ``granite verify [--candidate FILE] [--workloads FILE] [--slice PATH] [--device cpu|cuda] [--json OUT]``
- ``granite bench [--candidate FILE] [--workloads FILE] [--slice PATH] [--device ...] [--json OUT] [--plot PNG]
  [--reps N] [--inner N]``
- ``granite judge --candidate FILE [--workloads FILE] [--json OUT] [--device ...]``
- ``mamba3 selfcheck [--solver FILE] [--cases FILE] [--json OUT] [--device ...] [--reps N]``
- ``mamba3 judge --solver FILE [--cases FILE | --workloads FILE] [--json OUT] [--device ...]``
- ``export granite|mamba3 --out FILE``
Default device: cuda when available, else cpu. Exit status: 0 pass, 1 fail, 2 bad usage or set-up error.
"""
from __future__ import annotations

import argparse
import sys


def _granite_verify(a: argparse.Namespace) -> int:
    from ssmkit.harness.granite_verify import verify_command

    return verify_command(a.candidate, a.workloads, a.slice, a.device, a.json, argv=a.argv)


def _granite_bench(a: argparse.Namespace) -> int:
    from ssmkit.harness.granite_bench import bench_command

    return bench_command(a.candidate, a.workloads, a.slice, a.device, a.json, a.plot, a.reps, a.inner, argv=a.argv)


def _granite_judge(a: argparse.Namespace) -> int:
    from ssmkit.harness.judge import run_granite_judge

    return run_granite_judge(a.candidate, a.workloads, a.json, a.device)


def _mamba3_selfcheck(a: argparse.Namespace) -> int:
    from ssmkit.harness.mamba3_selfcheck import selfcheck_command

    return selfcheck_command(a.solver, a.cases, a.device, a.json, a.reps, argv=a.argv)


def _mamba3_judge(a: argparse.Namespace) -> int:
    from ssmkit.harness.judge import run_mamba3_judge

    return run_mamba3_judge(a.solver, a.cases, a.json, a.device)


def _export(a: argparse.Namespace) -> int:
    from ssmkit.harness.export import export_track

    export_track(a.track, a.out)
    return 0


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text}")
    return value


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", choices=["cpu", "cuda"], default=None,
                   help="default: cuda when available, else cpu")
    p.add_argument("--json", metavar="OUT", default=None, help="write the result as JSON here")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ssmkit", description=__doc__.splitlines()[0])
    tracks = parser.add_subparsers(dest="track", required=True)

    granite = tracks.add_parser("granite", help="Granite 4.0-H Mamba-2 mixer (inference)")
    gcmd = granite.add_subparsers(dest="command", required=True)
    for name, func, help_text in (("verify", _granite_verify, "a candidate vs the reference, calibrated bounds"),
                                  ("bench", _granite_bench, "paired timing of the reference vs a candidate")):
        p = gcmd.add_parser(name, help=help_text)
        p.add_argument("--candidate", metavar="FILE", default=None,
                       help="Python file defining CandidateBlock (default: the reference layer)")
        p.add_argument("--workloads", metavar="FILE", default=None,
                       help="workload JSON (default: workloads.json on CUDA, workloads_cpu.json on the CPU)")
        p.add_argument("--slice", metavar="PATH", default=None,
                       help="layer slice (safetensors) from ssmkit.granite.extract_slice (default: synthetic)")
        _common(p)
        p.set_defaults(func=func)
        if name == "bench":
            p.add_argument("--plot", metavar="PNG", default=None, help="write a bar chart here")
            p.add_argument("--reps", type=_positive, default=None,
                           help="A/B/B/A pairs per workload (default 16 on CUDA, 4 on the CPU)")
            p.add_argument("--inner", type=_positive, default=None,
                           help="candidate calls per pair (default 5 on CUDA, 1 on the CPU)")
    p = gcmd.add_parser("judge", help="clean-room judge of a candidate (isolated worker)")
    p.add_argument("--candidate", metavar="FILE", required=True)
    p.add_argument("--workloads", metavar="FILE", default=None)
    _common(p)
    p.set_defaults(func=_granite_judge)

    mamba3 = tracks.add_parser("mamba3", help="Mamba-3 SISO varlen operator (training)")
    mcmd = mamba3.add_subparsers(dest="command", required=True)
    p = mcmd.add_parser("selfcheck", help="a solver vs the eager baseline: checks, then timing")
    p.add_argument("--solver", metavar="FILE", default=None,
                   help="Python file defining mamba3_siso_varlen_joint_states_full_vjp (default: ssmkit.mamba3)")
    p.add_argument("--cases", metavar="FILE", default=None,
                   help="case JSON (default: cases.json on CUDA, a small version of it on the CPU)")
    p.add_argument("--reps", type=_positive, default=None, help="A/B/B/A pairs per case (default 6 CUDA, 2 CPU)")
    _common(p)
    p.set_defaults(func=_mamba3_selfcheck)
    p = mcmd.add_parser("judge", help="clean-room judge of a solver (isolated worker)")
    p.add_argument("--solver", metavar="FILE", required=True)
    p.add_argument("--cases", "--workloads", dest="cases", metavar="FILE", default=None)
    _common(p)
    p.set_defaults(func=_mamba3_judge)

    export = tracks.add_parser("export", help="write a track's fast implementation as one Python file")
    export.add_argument("track", choices=["granite", "mamba3"])
    export.add_argument("--out", metavar="FILE", required=True)
    export.set_defaults(func=_export)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: sys.argv[1:]) and run the command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = ["ssmkit", *argv]
    try:
        return args.func(args)
    except (FileNotFoundError, ValueError, TypeError) as exc:
        print(f"ssmkit: error: {exc}", file=sys.stderr, flush=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
