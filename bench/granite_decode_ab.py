"""Same-process A/B of the Granite decode call: the working tree's ``MappedIO`` against a baseline copy of
kernels/granite/mapped_io.py (``git show REF:src/ssmkit/kernels/granite/mapped_io.py > DIR/mapped_io.py``).

Two FastMambaLayers with the same weights; layer A captures its decode graphs with the baseline module's MappedIO,
layer B with the current one. Per decode bench workload: the outputs and cache states of one call of each must be
equal bit for bit, then the harness call time (``time_call``: CUDA events from an idle GPU, host time included),
A and B alternating in blocks of 10 calls, median us.
Usage (CUDA): PYTHONPATH=src python bench/granite_decode_ab.py --baseline DIR --out DIR [--calls 300]
"""
import argparse
import importlib.util
import json
import statistics
from pathlib import Path

import torch

import ssmkit.granite.layer as layer_mod
from ssmkit.granite import FastMambaLayer
from ssmkit.harness.granite_bench import timed_side
from ssmkit.harness.granite_run import build_layer, default_slice, make_inputs
from ssmkit.harness.report import run_metadata
from ssmkit.harness.timing import time_call
from ssmkit.harness.workloads import default_workloads_path, load_workloads


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    spec = importlib.util.spec_from_file_location("ab_baseline_mapped_io", args.baseline / "mapped_io.py")
    base = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(base)
    device = torch.device("cuda")
    sl = default_slice()
    layers = {"baseline": build_layer(FastMambaLayer, sl, device, torch.bfloat16),
              "new": build_layer(FastMambaLayer, sl, device, torch.bfloat16)}
    io_class = {"baseline": base.MappedIO, "new": layer_mod.MappedIO}
    rows = []
    with torch.no_grad():
        for w in load_workloads(default_workloads_path("cuda")):
            if w.purpose != "bench" or w.kind != "decode":
                continue
            inputs = [make_inputs(w, sl.config.hidden_size, "cuda", torch.bfloat16, rotation=r) for r in range(3)]
            sides, first = {}, {}
            for name, layer in layers.items():
                prepare, call = timed_side(layer, w, inputs)
                saved = layer_mod.MappedIO
                layer_mod.MappedIO = io_class[name]
                try:  # the first calls capture this side's graphs (one per rotation's cache)
                    for _ in range(3):
                        call(prepare())
                finally:
                    layer_mod.MappedIO = saved
                token, cache = prepare()
                out = call((token, cache))
                out = out[0] if isinstance(out, tuple) else out
                torch.cuda.synchronize()
                first[name] = (out.clone(), cache.conv_state.clone(), cache.ssm_state.clone())
                sides[name] = (prepare, call)
            equal = all(torch.equal(a, b) for a, b in zip(first["baseline"], first["new"]))
            times = {name: [] for name in sides}
            for i in range(2 * (args.calls // 10)):
                name = list(sides)[i % 2]
                prepare, call = sides[name]
                times[name] += [time_call(prepare, call, "cuda") * 1e3 for _ in range(10)]
            med = {name: statistics.median(t) for name, t in times.items()}
            rows.append(dict(workload=w.name, call_us=med, equal=equal))
            print(f"{w.name:14s} baseline {med['baseline']:7.1f} us  new {med['new']:7.1f} us  equal={equal}",
                  flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "granite_decode_ab.json"
    path.write_text(json.dumps(dict(run_metadata(None, device), rows=rows), indent=1))
    print("json:", path)


if __name__ == "__main__":
    main()
