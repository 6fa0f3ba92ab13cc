"""Shared test set-up.

On a machine without CUDA every Triton kernel in the suite runs in Triton's CPU interpreter. ``triton.jit`` picks
the interpreter at decoration time, so TRITON_INTERPRET must be set before any kernel module is imported; the
interpreter's bf16 defects (raw-bit ``tl.dot``, truncating casts) and its ``range()`` over run-time bounds are then
patched by ``ssmkit.kernels.interpreter`` so kernels keep their real GPU numerics and loops. Nothing here changes
kernel code.
"""
import os

import pytest

try:
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
except ImportError:
    pass

import ssmkit.kernels  # noqa: E402,F401  (applies the interpreter patch when TRITON_INTERPRET=1)


@pytest.fixture
def compile_for_sm90():
    """A function that runs a script of ``triton.compile(..., GPUTarget("cuda", 90, 32))`` calls in a subprocess
    without TRITON_INTERPRET (Triton's real compiler: frontend, LLVM, ptxas, on the CPU) and fails the test with the
    compiler's error if the script fails; skips where Triton has no nvidia backend."""
    def run(script: str, timeout: int = 900) -> None:
        import subprocess
        import sys

        import triton.backends

        if "nvidia" not in triton.backends.backends:
            pytest.skip("Triton's nvidia backend is not installed")
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                              timeout=timeout)
        assert proc.returncode == 0, proc.stderr[-3000:]
    return run
