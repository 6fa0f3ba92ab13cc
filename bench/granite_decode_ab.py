"""Same-process A/B of the Granite decode call across code versions and layer attributes.

Each ``--side NAME=PACKAGE[:JSON]`` is a FastMambaLayer from PACKAGE (``ssmkit``, the working tree, or a renamed copy
of another commit made by ``bench/ab_package.py``, found on ``--packages``), with the layer attributes in JSON
(e.g. ``'{"decode_projections": "cublas"}'``), built with the same weights by its own package's harness (its own
MambaCache, inputs and call: a layer's fast paths check its own types), each capturing its own decode graphs.

Per decode bench workload: the outputs and cache states of one call of each side, compared with the first side's
(``equal``: bit for bit; ``out_rel_diff``: norm-relative difference of the outputs), then the harness call time
(``time_call``: CUDA events from an idle GPU, host time included), the sides taking turns in blocks of 10 calls,
median us. (Until session 8 the script compared two attribute sets of one package, ``--a`` / ``--b``; session 5's
run 1 compared a baseline copy of mapped_io.py, with this script at commit 20cf596.)
Usage (CUDA): PYTHONPATH=src python bench/granite_decode_ab.py --side s7=ssmkit_s7 --side new=ssmkit \\
    [--side cublas='ssmkit:{"decode_projections": "cublas"}'] [--packages bench/_ab/pkgs] --out DIR [--calls 300]
"""
import argparse
import importlib
import json
import statistics
import sys
from pathlib import Path

import torch

from ssmkit.harness.report import run_metadata, write_json


def parse_side(spec: str) -> tuple[str, str, dict]:
    """'NAME=PACKAGE[:JSON]' -> (name, package, attributes)."""
    name, _, rest = spec.partition("=")
    package, _, attrs = rest.partition(":")
    if not name or not package:
        raise argparse.ArgumentTypeError(f"expected NAME=PACKAGE[:JSON], got {spec!r}")
    return name, package, json.loads(attrs) if attrs else {}


class Side:
    """One side: its package's layer (same weights as every side: the harness seeds them), workloads and call."""

    def __init__(self, package: str, attrs: dict, device: torch.device) -> None:
        run = importlib.import_module(f"{package}.harness.granite_run")
        self.bench = importlib.import_module(f"{package}.harness.granite_bench")
        self.timing = importlib.import_module(f"{package}.harness.timing")
        self.workloads = importlib.import_module(f"{package}.harness.workloads")
        self.make_inputs = run.make_inputs
        self.slice = run.default_slice()
        self.layer = run.build_layer(importlib.import_module(f"{package}.granite").FastMambaLayer, self.slice,
                                     device, torch.bfloat16)
        for key, value in attrs.items():
            setattr(self.layer, key, value)

    def decode_workloads(self) -> list:
        return [w for w in self.workloads.load_workloads(self.workloads.default_workloads_path("cuda"))
                if w.purpose == "bench" and w.kind == "decode"]

    def prepare(self, w):
        """(prepare, call) for workload ``w``, graphs captured, and the outputs of one call."""
        inputs = [self.make_inputs(w, self.slice.config.hidden_size, "cuda", torch.bfloat16, rotation=r)
                  for r in range(3)]
        prepare, call = self.bench.timed_side(self.layer, w, inputs)
        for _ in range(3):  # the first calls capture this side's graphs (one per rotation's cache)
            call(prepare())
        token, cache = prepare()
        out = call((token, cache))[0]
        torch.cuda.synchronize()
        return (prepare, call), (out.clone(), cache.conv_state.clone(), cache.ssm_state.clone())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--side", type=parse_side, action="append", required=True)
    ap.add_argument("--packages", type=Path, default=Path("bench/_ab/pkgs"))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    sys.path.insert(0, str(args.packages.resolve()))
    device = torch.device("cuda")
    sides = {name: Side(package, attrs, device) for name, package, attrs in args.side}
    first_name = next(iter(sides))
    rows = []
    with torch.no_grad():
        for w in sides[first_name].decode_workloads():
            calls, first = {}, {}
            for name, side in sides.items():
                sw = next(x for x in side.decode_workloads() if x.name == w.name)
                calls[name], first[name] = side.prepare(sw)
            base = first[first_name]
            equal = {n: all(torch.equal(x, y) for x, y in zip(r, base)) for n, r in first.items()}
            rel = {n: ((r[0].double() - base[0].double()).norm() / base[0].double().norm()).item()
                   for n, r in first.items()}
            times = {name: [] for name in sides}
            for i in range(len(sides) * (args.calls // 10)):
                name = list(sides)[i % len(sides)]
                prepare, call = calls[name]
                times[name] += [sides[name].timing.time_call(prepare, call, "cuda") * 1e3 for _ in range(10)]
            med = {name: statistics.median(t) for name, t in times.items()}
            rows.append(dict(workload=w.name, call_us=med, equal_to_first=equal, out_rel_diff=rel))
            print(f"{w.name:12s} " + "  ".join(f"{n} {med[n]:6.1f}{'' if equal[n] else '*'}" for n in sides)
                  + f"   (us; * = not bit-equal to {first_name}, max rel diff {max(rel.values()):.1e})", flush=True)
    path = args.out / "granite_decode_ab.json"
    write_json(path, dict(run_metadata(None, device), sides=[dict(name=n, package=p, attrs=a) for n, p, a in args.side],
                          rows=rows))
    print("json:", path)


if __name__ == "__main__":
    main()
