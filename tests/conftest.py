"""Shared test set-up.

Triton's CPU interpreter (triton 3.6) multiplies the raw uint16 bits of bf16 operands in ``tl.dot``. We patch the
interpreter's dot to upcast bf16 operands to fp32 first, so kernels keep their real (GPU) numerics and the tests
still exercise them on the CPU. Nothing here changes kernel code.
"""
import os

import numpy as np
import pytest

# triton.jit picks the interpreter at decoration time, so this must be set before any kernel module is imported.
# On a machine without CUDA, every Triton kernel in the suite runs in the interpreter.
try:
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
except ImportError:
    pass


def _patch_interpreter_dot() -> None:
    try:
        import triton.language as tl
        from triton.runtime import interpreter
    except ImportError:  # triton not installed: kernel tests skip themselves
        return
    builder = interpreter.InterpreterBuilder
    if getattr(builder.create_dot, "_ssmkit_patched", False):
        return
    original = builder.create_dot

    def _bf16_bits_to_f32(data: np.ndarray) -> np.ndarray:
        return (data.astype(np.uint32) << 16).view(np.float32)

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        if a.dtype.scalar == tl.bfloat16 or b.dtype.scalar == tl.bfloat16:
            a_data = _bf16_bits_to_f32(a.data) if a.dtype.scalar == tl.bfloat16 else a.data.astype(np.float32)
            b_data = _bf16_bits_to_f32(b.data) if b.dtype.scalar == tl.bfloat16 else b.data.astype(np.float32)
            out = np.matmul(a_data, b_data, dtype=np.float32).astype(d.data.dtype) + d.data
            return interpreter.TensorHandle(out, d.dtype.scalar)
        return original(self, a, b, d, input_precision, max_num_imprecise_acc)

    create_dot._ssmkit_patched = True
    builder.create_dot = create_dot


_patch_interpreter_dot()
