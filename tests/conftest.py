"""Shared test set-up.

On a machine without CUDA every Triton kernel in the suite runs in Triton's CPU interpreter. ``triton.jit`` picks
the interpreter at decoration time, so TRITON_INTERPRET must be set before any kernel module is imported; the
interpreter's bf16 defects (raw-bit ``tl.dot``, truncating casts) are then patched by
``ssmkit.kernels.interpreter`` so kernels keep their real GPU numerics. Nothing here changes kernel code.
"""
import os

try:
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
except ImportError:
    pass

import ssmkit.kernels  # noqa: E402,F401  (applies the interpreter patch when TRITON_INTERPRET=1)
