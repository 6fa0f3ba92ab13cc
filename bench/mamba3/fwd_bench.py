"""Mamba-3 SISO forward kernel on CUDA: error vs the float64 oracle and GPU time, over a launch-config sweep.

Usage (on a GPU machine, repository root): PYTHONPATH=src python bench/mamba3/fwd_bench.py --out DIR --commit SHA
Steps: (1) the float64 token-recurrence oracle (ssmkit.mamba3.oracle, run on the GPU in float64) on one visible case;
(2) per config: compile, norm-relative errors of all results, bit-determinism of two runs, GPU time (median of
do_bench over CUDA-graph replays; do_bench flushes L2 before every replay); (3) for the fastest config within the
issue-6 targets: every visible case of src/ssmkit/mamba3/cases.json, with and without the saved tensors, and the wall
time per call of the Python entry (host timer, 200 calls, one sync). Writes DIR/mamba3_fwd_<utc>.json after each
step, prints a table last. --smoke runs the same logic on the CPU interpreter (tiny case, no timing) to check the
script before spending device time.
"""
import argparse
import datetime
import json
import math
import os
import time

import torch
import triton
from triton.testing import do_bench

from ssmkit.kernels.mamba3.fwd import (
    Mamba3FwdConfig, _mamba3_fwd_chunk_scan_kernel, _mamba3_fwd_chunk_state_kernel, _mamba3_fwd_state_passing_kernel,
    mamba3_siso_fwd,
)
from ssmkit.mamba3.inputs import make_inputs
from ssmkit.mamba3.oracle import mamba3_siso_oracle
from ssmkit.mamba3.shapes import CHUNK, INPUT_NAMES

CASES_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "src", "ssmkit", "mamba3", "cases.json")
CHECK_CASE = "c1_four_mixed"
OFFICIAL_ERROR = {"out": 4.7e-3, "final_ssm": 5.0e-3}  # official kernels vs fp64 (issue 6)
TARGET = {"out": 2.35e-3, "final_ssm": 2.5e-3, "final_k": 2.5e-3, "final_angle": 2.5e-3, "y": 2.5e-3}  # half of it
CONFIGS = [  # (chunk_warps, passing_block_p, passing_warps, input_precision), in order of priority: the sweep
    # stops compiling new ones after SWEEP_BUDGET_S
    Mamba3FwdConfig(8, 16, 4, "tf32"), Mamba3FwdConfig(4, 16, 4, "tf32"), Mamba3FwdConfig(8, 32, 4, "tf32"),
    Mamba3FwdConfig(8, 8, 2, "tf32"), Mamba3FwdConfig(8, 16, 4, "tf32x3"),
]
SWEEP_BUDGET_S = 140


def _inputs(case, device="cuda"):
    everything = make_inputs(case["seqlens"], case["seed"], device=device)
    return {name: everything[name] for name in INPUT_NAMES}


def _errors(args, result, oracle):
    out, final_angle, final_ssm, final_k, final_v, saved = result
    out_ref, angle_ref, ssm_ref, k_ref, v_ref = oracle

    def rel(x, ref):
        return ((x.double() - ref).norm() / ref.norm()).item()

    z = args["z"].double()
    wrapped = torch.remainder(final_angle.double() - angle_ref + math.pi, 2 * math.pi) - math.pi
    return {
        "out": rel(out, out_ref), "out_bf16_rounding_floor": rel(out_ref.to(torch.bfloat16), out_ref),
        "final_angle": (wrapped.norm() / angle_ref.norm()).item(), "final_ssm": rel(final_ssm, ssm_ref),
        "final_k": rel(final_k, k_ref), "final_v_exact": bool(torch.equal(final_v.double(), v_ref)),
        "y": rel(saved.y, out_ref / (z * torch.sigmoid(z))),
    }


def _bitwise_equal(first, second, cu_seqlens):
    """Whether two forward results agree bit for bit (chunk states only at the indices chunks map to)."""
    bounds = cu_seqlens.tolist()
    slots = [a // CHUNK + s + c for s, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])) for c in range(-(-(b - a) // CHUNK))]
    same = all(torch.equal(x, y) for x, y in zip(first[:5] + first[5][:2], second[:5] + second[5][:2]))
    return same and torch.equal(first[5].chunk_states[slots], second[5].chunk_states[slots])


def _sync(on_gpu):
    if on_gpu:
        torch.cuda.synchronize()


def _graph_ms(args, config, save):
    """Median GPU ms of one forward, replayed from a CUDA graph (no Python in the timed region)."""
    mamba3_siso_fwd(**args, save_for_backward=save, config=config)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        mamba3_siso_fwd(**args, save_for_backward=save, config=config)
    return do_bench(graph.replay, warmup=50, rep=300, return_mode="median")


def _wall_ms(args, config, calls=200):
    for _ in range(10):
        mamba3_siso_fwd(**args, config=config)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        mamba3_siso_fwd(**args, config=config)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e3


def _compile_stats():
    """Registers and spills of every compiled variant of the three kernels (Triton internals, best effort)."""
    stats = []
    for jit_fn in (_mamba3_fwd_chunk_state_kernel, _mamba3_fwd_state_passing_kernel, _mamba3_fwd_chunk_scan_kernel):
        try:
            for kernel in jit_fn.device_caches[torch.cuda.current_device()][0].values():
                kernel._init_handles()
                consts = {jit_fn.arg_names[k[0]]: v for k, v in kernel.src.constants.items() if isinstance(k, tuple)}
                stats.append({"kernel": jit_fn.__name__, "num_warps": kernel.metadata.num_warps,
                              "n_regs": kernel.n_regs, "n_spills": kernel.n_spills,
                              **{k: consts[k] for k in ("BLOCK_P", "PRECISION", "SAVE") if k in consts}})
        except Exception as exc:  # noqa: BLE001 - statistics only
            stats.append({"kernel": jit_fn.__name__, "error": repr(exc)[:300]})
    return stats


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--commit", default="unknown")
    parser.add_argument("--smoke", action="store_true", help="CPU interpreter, tiny case, no timing")
    cli = parser.parse_args()
    device = "cpu" if cli.smoke else "cuda"
    timed = not cli.smoke
    os.makedirs(cli.out, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = os.path.join(cli.out, f"mamba3_fwd_{stamp}.json")
    report = {
        "command": "PYTHONPATH=src python bench/mamba3/fwd_bench.py --out $OUT --commit " + cli.commit,
        "git_commit": cli.commit, "gpu": torch.cuda.get_device_name() if timed else "cpu interpreter", "torch": torch.__version__,
        "triton": triton.__version__, "timestamp": stamp, "check_case": CHECK_CASE, "targets": TARGET,
        "official_error": OFFICIAL_ERROR, "configs": [], "cases": [],
    }

    def dump():
        with open(path, "w") as f:
            json.dump(report, f, indent=1)

    cases = json.load(open(CASES_PATH))
    check = next(c for c in cases if c["name"] == CHECK_CASE)
    configs = CONFIGS
    if cli.smoke:
        check, cases, configs = {"name": "smoke", "seqlens": [70, 60], "seed": 1}, [], CONFIGS[:1]
    args = _inputs(check, device)
    t0 = time.perf_counter()
    with torch.no_grad():
        oracle = mamba3_siso_oracle(**args)
    _sync(timed)
    report["oracle_s"] = time.perf_counter() - t0
    report["check_T"] = int(args["q"].shape[0])
    dump()

    sweep_start = time.perf_counter()
    for config in configs:
        if time.perf_counter() - sweep_start > SWEEP_BUDGET_S:
            report["configs"].append({"config": config._asdict(), "skipped": "sweep time budget"})
            continue
        row = {"config": config._asdict()}
        try:
            t0 = time.perf_counter()
            first = mamba3_siso_fwd(**args, config=config)
            _sync(timed)
            row["first_call_s"] = time.perf_counter() - t0
            second = mamba3_siso_fwd(**args, config=config)
            row["deterministic"] = _bitwise_equal(first, second, args["cu_seqlens"])
            row["errors"] = _errors(args, first, oracle)
            row["within_targets"] = all(row["errors"][k] <= v for k, v in TARGET.items()) and row["errors"]["final_v_exact"]
            row["gpu_ms"] = _graph_ms(args, config, save=True) if timed else float("nan")
        except Exception as exc:  # noqa: BLE001 - a config that fails to compile or run is reported, not fatal
            row["error"] = repr(exc)[:1000]
        report["configs"].append(row)
        dump()

    report["compile"] = _compile_stats() if timed else None
    dump()
    ran = [r for r in report["configs"] if r.get("deterministic")]
    good = [r for r in ran if r["within_targets"]] or ran  # fall back to the fastest deterministic one
    best = min(good, key=lambda r: (r["gpu_ms"] if timed else 0.0)) if good else None
    report["best"] = best["config"] if best else None
    report["best_within_targets"] = bool(best and best["within_targets"])
    if best:
        config = Mamba3FwdConfig(**best["config"])
        for case in cases:
            case_args = _inputs(case)
            report["cases"].append({
                "name": case["name"], "T": int(case_args["q"].shape[0]), "S": len(case["seqlens"]),
                "max_len": max(case["seqlens"]),
                "gpu_ms": _graph_ms(case_args, config, save=True),
                "gpu_ms_no_save": _graph_ms(case_args, config, save=False),
                "wall_ms": _wall_ms(case_args, config),
            })
            dump()

    print(f"{report['gpu']}, torch {report['torch']}, triton {report['triton']}, oracle {report['oracle_s']:.1f}s, "
          f"check case {CHECK_CASE} T={report['check_T']}")
    print(f"{'config':<24}{'gpu_ms':>8}{'out':>10}{'fssm':>10}{'fk':>10}{'fangle':>10}{'y':>10}  det ok")
    for r in report["configs"]:
        c = r["config"]
        name = f"w{c['chunk_warps']} P{c['passing_block_p']}/w{c['passing_warps']} {c['input_precision']}"
        if "errors" in r:
            e = r["errors"]
            print(f"{name:<24}{r.get('gpu_ms', float('nan')):>8.4f}{e['out']:>10.2e}{e['final_ssm']:>10.2e}"
                  f"{e['final_k']:>10.2e}{e['final_angle']:>10.2e}{e['y']:>10.2e}  {r['deterministic']} "
                  f"{r['within_targets']}")
        else:
            print(f"{name:<24} {r.get('error', r.get('skipped'))}")
    print(f"best {report['best']}; compiled variants: {report['compile']}")
    for c in report["cases"]:
        print(f"{c['name']:<24} T={c['T']:<5} S={c['S']} gpu {c['gpu_ms']:.4f} ms, no-save {c['gpu_ms_no_save']:.4f} ms, "
              f"wall {c['wall_ms']:.4f} ms")
    print("json", path)


if __name__ == "__main__":
    main()
