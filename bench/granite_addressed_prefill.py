"""Prototype A/B (GPU): a B = 1 prefill whose captured graph holds in_proj too, reading the caller's hidden states
at their address (one graph per input address), against the fast layer as it is ("kernels" graph: in_proj launched
eagerly before the replay, so the GPU idles through cuBLAS's host launch path; bench/granite/NOTES.md "Session 33").

Side B is built here from the layer's own pieces (``_in_proj``, ``_prefill_kernels``, out_proj launched eagerly
after the replay as the layer does) and takes the layer's fast-path checks (``_PrefillBinding.input_matches``) so
that the two sides spend the same host time on checks. Both sides are timed as the harness times a call (CUDA
events from an idle GPU, 3 rotating input sets: 3 addresses, so side B holds 3 graphs), in alternating blocks of
10 calls; outputs and caches are compared bit for bit. Prints a table and writes JSON (``--out``).
Usage (CUDA): PYTHONPATH=src python bench/granite_addressed_prefill.py [--blocks 20] [--workloads a,b] [--out F]
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F

from granite_call_gap import harness_side
from granite_profile import bench_workloads, configured_layer
from ssmkit.granite import FastMambaLayer
from ssmkit.granite.cache import MambaCache
from ssmkit.harness.granite_run import default_slice
from ssmkit.harness.report import run_metadata
from ssmkit.harness.timing import time_call
from ssmkit.kernels.common.mapped_io import capture_graph


class AddressedPrefill:
    """Side B: ``__call__(hidden_states, attention_mask=None)`` -> (output, cache) for unmasked prefills without a
    cache; one graph (in_proj + the kernels between the GEMMs) per (address, shape) of hidden_states."""

    def __init__(self, layer: FastMambaLayer) -> None:
        self.layer = layer
        self.graphs = {}

    def __call__(self, hidden_states, attention_mask=None):
        assert attention_mask is None
        layer = self.layer
        bound = layer._prefill_bound.get(hidden_states.shape)  # (the checks the layer's fast path makes)
        if bound is None or not bound.input_matches(hidden_states, layer.in_proj.weight, layer._prefill_switches()):
            raise RuntimeError("call the layer once on this shape first (its fast path's binding)")
        key = (hidden_states.data_ptr(), hidden_states.shape, hidden_states.stride())
        entry = self.graphs.get(key)
        if entry is None:
            entry = self.graphs[key] = self._capture(hidden_states)
        graph, normed, cache = entry
        graph.replay()
        out = F.linear(normed, layer.out_proj.weight, layer.out_proj.bias)
        return out, MambaCache(cache.conv_state.clone(), cache.ssm_state.clone())

    def _capture(self, hidden_states):
        layer = self.layer
        with torch.inference_mode(False), torch.no_grad():
            cache = MambaCache.zeros(layer.config, hidden_states.shape[0], device=hidden_states.device,
                                     dtype=hidden_states.dtype)

            def step():
                return layer._prefill_kernels(layer._in_proj(hidden_states, None, None), None, cache, False)
            graph, normed = capture_graph(step, step, hidden_states.device)
        return graph, normed, cache


def compare(layer, side_b, w, hidden_size, device) -> dict:
    """Bitwise comparison of the two sides' output and cache on the workload's first input set."""
    prepare, _ = harness_side(layer, w, hidden_size, device)
    hidden, _ = prepare()
    with torch.no_grad():
        out_a, cache_a = layer(hidden)
        out_b, cache_b = side_b(hidden)
    return {name: bool(torch.equal(a, b)) for name, a, b in (("output", out_a, out_b),
                                                             ("conv_state", cache_a.conv_state, cache_b.conv_state),
                                                             ("ssm_state", cache_a.ssm_state, cache_b.ssm_state))}


def ab(layer, side_b, w, hidden_size, device, blocks: int) -> dict:
    """Median event time (us) of the layer ("A") and side B, alternating blocks of 10 calls (first of each dropped),
    plus peak memory of each side's calls (MiB)."""
    prep_a, call_a = harness_side(layer, w, hidden_size, device)
    prep_b, _ = harness_side(layer, w, hidden_size, device)

    def call_b(args):
        return side_b(args[0], attention_mask=args[1])
    sides = {"A": (prep_a, call_a), "B": (prep_b, call_b)}
    times = {"A": [], "B": []}
    peak = {}
    with torch.no_grad():
        for name, (prep, call) in sides.items():  # warm-up: captures, bindings
            for _ in range(6):
                call(prep())
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats(device)
            call(prep())
            torch.cuda.synchronize()
            peak[name] = torch.cuda.max_memory_allocated(device) / 2**20
        for b in range(blocks):
            name = "B" if b % 2 else "A"
            prep, call = sides[name]
            got = [time_call(prep, call, device) * 1e3 for _ in range(10)]
            times[name].extend(got[1:])
    return {"A_us": statistics.median(times["A"]), "B_us": statistics.median(times["B"]),
            "A_spread": (max(times["A"]) - min(times["A"])) / statistics.median(times["A"]),
            "B_spread": (max(times["B"]) - min(times["B"])) / statistics.median(times["B"]),
            "peak_after_warmup_MiB": peak, "graphs_B": len(side_b.graphs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=20)
    ap.add_argument("--workloads", default="prefill_b1_l4096,prefill_b1_l16384")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("granite_addressed_prefill needs a CUDA GPU")
    device = torch.device("cuda")
    sl = default_slice()
    layer = configured_layer(FastMambaLayer, sl, device, {})
    side_b = AddressedPrefill(layer)
    rows = []
    print(f"{'workload':<22} {'A (layer) us':>13} {'B (addressed) us':>17} {'B - A':>8} {'bits equal':>11}")
    for w in bench_workloads(args.workloads):
        same = compare(layer, side_b, w, sl.config.hidden_size, device)
        r = ab(layer, side_b, w, sl.config.hidden_size, device, args.blocks)
        r.update(workload=w.name, bits_equal=same)
        rows.append(r)
        print(f"{w.name:<22} {r['A_us']:>13.1f} {r['B_us']:>17.1f} {r['B_us'] - r['A_us']:>+8.1f} "
              f"{str(all(same.values())):>11}  spreads {r['A_spread']:.2f}/{r['B_spread']:.2f} "
              f"peak MiB {r['peak_after_warmup_MiB']}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({**run_metadata(None, device), "command": "bench/granite_addressed_prefill.py", "rows": rows},
                      f, indent=1)


if __name__ == "__main__":
    main()
