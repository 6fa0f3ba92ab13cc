"""Same-process A/B of the Granite decode call: two FastMambaLayers with the same weights, each with its own layer
attributes (``--a`` / ``--b``, JSON, e.g. '{"decode_projections": "cublas"}'), each capturing its own decode graphs.

Per decode bench workload: the outputs and cache states of one call of each side, compared (``equal``: bit for
bit; ``out_rel_diff``: norm-relative difference of the outputs), then the harness call time (``time_call``: CUDA
events from an idle GPU, host time included), A and B alternating in blocks of 10 calls, median us. (Session 5's
run 1 compared a baseline copy of mapped_io.py instead, with this script at commit 20cf596.)
(Session 5's run 4 also swept a fused RMSNorm + out_proj launch with ``--sweep-out``, at commit af4e6d6.)
Usage (CUDA): PYTHONPATH=src python bench/granite_decode_ab.py --a JSON --b JSON --out DIR [--calls 300]
"""
import argparse
import json
import statistics
from pathlib import Path

import torch

from ssmkit.granite import FastMambaLayer
from ssmkit.harness.granite_bench import timed_side
from ssmkit.harness.granite_run import build_layer, default_slice, make_inputs
from ssmkit.harness.report import run_metadata, write_json
from ssmkit.harness.timing import time_call
from ssmkit.harness.workloads import default_workloads_path, load_workloads


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", default="{}")
    ap.add_argument("--b", default='{"decode_io": "copy"}')
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    device = torch.device("cuda")
    sl = default_slice()
    layers = {}
    for name, attrs in (("a", json.loads(args.a)), ("b", json.loads(args.b))):
        layers[name] = build_layer(FastMambaLayer, sl, device, torch.bfloat16)
        for key, value in attrs.items():
            setattr(layers[name], key, value)
    rows = []
    with torch.no_grad():
        for w in load_workloads(default_workloads_path("cuda")):
            if w.purpose != "bench" or w.kind != "decode":
                continue
            inputs = [make_inputs(w, sl.config.hidden_size, "cuda", torch.bfloat16, rotation=r) for r in range(3)]
            sides, first = {}, {}
            for name, layer in layers.items():
                prepare, call = timed_side(layer, w, inputs)
                for _ in range(3):  # the first calls capture this side's graphs (one per rotation's cache)
                    call(prepare())
                token, cache = prepare()
                out = call((token, cache))[0]
                torch.cuda.synchronize()
                first[name] = (out.clone(), cache.conv_state.clone(), cache.ssm_state.clone())
                sides[name] = (prepare, call)
            equal = all(torch.equal(x, y) for x, y in zip(first["a"], first["b"]))
            rel = ((first["a"][0].double() - first["b"][0].double()).norm() / first["b"][0].double().norm()).item()
            times = {name: [] for name in sides}
            for i in range(2 * (args.calls // 10)):
                name = list(sides)[i % 2]
                prepare, call = sides[name]
                times[name] += [time_call(prepare, call, "cuda") * 1e3 for _ in range(10)]
            med = {name: statistics.median(t) for name, t in times.items()}
            rows.append(dict(workload=w.name, call_us=med, equal=equal, out_rel_diff=rel))
            print(f"{w.name:14s} a {med['a']:7.1f} us  b {med['b']:7.1f} us  equal={equal} out rel diff {rel:.1e}",
                  flush=True)
    path = args.out / "granite_decode_ab.json"
    write_json(path, dict(run_metadata(None, device), a=json.loads(args.a), b=json.loads(args.b), rows=rows))
    print("json:", path)


if __name__ == "__main__":
    main()
