"""Run chosen kernels once each inside a CUDA profiler range, for Nsight Compute (``ncu --profile-from-start off``).

Targets (``--targets``, comma-separated):
- ``granite_l16384``, ``granite_varlen``, ``granite_decode64``: one call of the fast Granite layer on that bench
  workload (``workloads.json``), graphs off so that every kernel is its own launch (decode: the eager step);
- ``mamba3_c1``: one full call (forward + VJP) of the Mamba-3 op on case c1_four_mixed, through the public
  entry's default path: on CUDA its graph (captured on the second warm-up call, replayed in the profiled one),
  whose kernel nodes ncu profiles one by one, as built for the graph (inputs at posted addresses).
Each target runs twice first (compiles, cuBLAS set-up), then once between ``torch.cuda.profiler.start/stop``.
The ncu invocation and the digest of its report are in ``bench/ncu_run.sh``.
Usage (CUDA): ncu --profile-from-start off ... python bench/ncu_profile.py --targets granite_l16384,mamba3_c1
"""
import argparse
import json

import torch

from ssmkit.granite import FastMambaLayer
from ssmkit.harness.granite_bench import timed_side
from ssmkit.harness.granite_run import build_layer, default_slice, make_inputs
from ssmkit.harness.workloads import default_workloads_path, load_workloads

GRANITE_TARGETS = {"granite_l16384": "prefill_b1_l16384", "granite_varlen": "prefill_varlen_b8",
                   "granite_decode64": "decode_b64"}
MAMBA3_CASE = "c1_four_mixed"


def granite_call(workload_name: str):
    """A no-argument callable running one layer call on the named bench workload (graphs off)."""
    layer_slice = default_slice()
    layer = build_layer(FastMambaLayer, layer_slice, torch.device("cuda"), torch.bfloat16)
    layer.use_cuda_graphs = False
    layer.prefill_graphs = False
    w = next(w for w in load_workloads(default_workloads_path("cuda")) if w.name == workload_name)
    sets = [make_inputs(w, layer_slice.config.hidden_size, torch.device("cuda"), torch.bfloat16)]
    prepare, call = timed_side(layer, w, sets)
    return lambda: call(prepare())


def mamba3_call(bwd_fields: dict):
    """A no-argument callable running one full call of the Mamba-3 op on case c1, with the default backward
    configuration but for ``bwd_fields`` (Mamba3BwdConfig fields)."""
    from importlib import resources

    from ssmkit.kernels.mamba3.bwd import DEFAULT_BWD_CONFIG

    from ssmkit.mamba3.inputs import make_inputs as mamba3_inputs
    from ssmkit.mamba3.op import mamba3_siso_varlen_joint_states_full_vjp

    cases = json.loads(resources.files("ssmkit.mamba3").joinpath("cases.json").read_text())
    case = next(c for c in cases if c["name"] == MAMBA3_CASE)
    args = mamba3_inputs(case["seqlens"], case["seed"], "cuda")
    config = DEFAULT_BWD_CONFIG._replace(**bwd_fields)
    return lambda: mamba3_siso_varlen_joint_states_full_vjp(**args, bwd_config=config)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--targets", default="granite_l16384,granite_varlen,granite_decode64,mamba3_c1")
    ap.add_argument("--mamba3-bwd-config", default="{}", help="JSON of Mamba3BwdConfig fields for mamba3_c1")
    args = ap.parse_args()
    calls = {}
    for name in args.targets.split(","):
        if name in GRANITE_TARGETS:
            calls[name] = granite_call(GRANITE_TARGETS[name])
        elif name == "mamba3_c1":
            calls[name] = mamba3_call(json.loads(args.mamba3_bwd_config))
        else:
            raise SystemExit(f"unknown target {name!r}")
    with torch.no_grad():
        for fn in calls.values():
            fn()
            fn()
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        for fn in calls.values():
            fn()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    print("profiled:", ", ".join(calls))


if __name__ == "__main__":
    main()
