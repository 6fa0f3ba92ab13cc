"""What the Granite prefill's projection GEMMs launch, and what a call of each form costs from an idle GPU.

A B = 1 prefill's in_proj (`torch.mm(..., out=)` in the layer) showed a cuBLAS memset 8-14 us before its GEMM: host
time between two launches while the GPU idles at the start of a timed call (bench/granite/NOTES.md "Session 11",
"Session 21"). Per projection shape at L = 4096 and 16384 and per call form (``torch.mm`` into a given output, as the
layer does; ``torch.mm`` allocating; ``F.linear``; ``torch.matmul``), with bf16 reduced-precision reductions allowed
(torch's default) and not, through each of torch's CUDA BLAS paths (``preferred_blas_library``: cuBLAS, cuBLASLt):
the CUDA kernels one call launches (names, from the profiler), the median CUDA-event time of a call issued to an
idle GPU (host launch included) and the host time the call takes to return, so a form without the memset, or with a
shorter gap, can be chosen from numbers.
Usage (CUDA): PYTHONPATH=src python bench/granite_gemm_launches.py [--calls 50] [--out F.json]
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

from ssmkit.granite import GraniteMambaConfig
from ssmkit.harness.report import run_metadata


def forms(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor) -> dict:
    """The call forms of x @ w^T, each a no-argument callable."""
    return {"mm_out": lambda: torch.mm(x, w.t(), out=out), "mm": lambda: torch.mm(x, w.t()),
            "linear": lambda: F.linear(x, w), "matmul": lambda: torch.matmul(x, w.t())}


def launched_kernels(fn) -> list[str]:
    """Names of the CUDA kernels one call of ``fn`` launches (in launch order)."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return [e.name[:80] for e in sorted(events, key=lambda e: e.time_range.start)]


def idle_call_times(fn, calls: int) -> tuple[float, float]:
    """Medians (us) over calls issued to an idle GPU (synchronised before each call): the CUDA-event time of one
    call, and the host time the call takes to return (its launches: what delays the GPU's start)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times, host = [], []
    for _ in range(calls):
        torch.cuda.synchronize()
        start.record()
        t0 = time.perf_counter()
        fn()
        host.append((time.perf_counter() - t0) * 1e6)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times), statistics.median(host)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("granite_gemm_launches needs a CUDA GPU")
    cfg, dev, bf16 = GraniteMambaConfig(), torch.device("cuda"), torch.bfloat16
    shapes = {"in_proj": (cfg.hidden_size, cfg.in_proj_dim), "out_proj": (cfg.intermediate_size, cfg.hidden_size)}
    flag = torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
    library = torch.backends.cuda.preferred_blas_library()
    rows = []
    try:
        for blas, reduced in [(b, r) for b in ("cublas", "cublaslt") for r in (flag, not flag)]:
            torch.backends.cuda.preferred_blas_library(blas)
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = reduced
            for name, (k, n) in shapes.items():
                w = torch.randn(n, k, device=dev, dtype=bf16)
                for length in (4096, 16384):
                    x = torch.randn(length, k, device=dev, dtype=bf16)
                    out = torch.empty(length, n, device=dev, dtype=bf16)
                    for form, fn in forms(x, w, out).items():
                        fn()  # (cuBLAS set-up)
                        idle, host = idle_call_times(fn, args.calls)
                        row = {"projection": name, "L": length, "form": form, "blas": blas,
                               "bf16_reduced_reduction": reduced, "kernels": launched_kernels(fn),
                               "idle_call_us": idle, "host_us": host}
                        rows.append(row)
                        print(f"{name:8s} L={length:5d} {form:7s} {blas:8s} reduced={reduced!s:5s} "
                              f"{idle:8.1f} us (host {host:5.1f})  {' | '.join(row['kernels'])}", flush=True)
    finally:
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = flag
        torch.backends.cuda.preferred_blas_library(library)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({**run_metadata(None, dev), "rows": rows}, f, indent=1)
        print(f"json: {args.out}")


if __name__ == "__main__":
    main()
