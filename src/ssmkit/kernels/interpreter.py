"""Make Triton's CPU interpreter (triton 3.6) compute what the GPU computes for bf16.

Three known interpreter defects would otherwise make correct kernels look wrong (or fail) on the CPU:

- ``tl.dot`` on bf16 operands multiplies the raw uint16 bit patterns; here bf16 operands are upcast to fp32 first
  (the GPU multiplies bf16 values exactly and accumulates in fp32).
- fp32 -> bf16 casts (``.to(tl.bfloat16)`` and stores into bf16 memory) truncate; the GPU rounds to nearest even.
- ``for i in range(n)`` with a run-time bound ``n`` (a value the kernel loaded or computed) raises under numpy 2:
  the interpreter turns a scalar into a Python int with ``int()`` of a one-element 1-D array. Kernels used
  ``while`` loops instead, which Triton does not software-pipeline on the GPU; here the scalar is read with
  ``.item()``, so kernels can use ``range`` (bench/granite/NOTES.md "Session 4"). (The Granite SSD's state pass
  and chunk scan keep their ``while`` loops on purpose: pipelined, the scan was measured slower.)

``patch_triton_interpreter()`` fixes the three in the interpreter only; it changes no kernel and has no effect on a GPU.
``ssmkit.kernels`` applies it on import when ``TRITON_INTERPRET=1``.
"""
from __future__ import annotations

import numpy as np
import torch


def _bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def patch_triton_interpreter() -> None:
    """Patch ``InterpreterBuilder.create_dot`` and ``cast_impl``, and the scalar-to-index conversion of the
    interpreter's tensors (idempotent; a no-op without triton)."""
    try:
        import triton.language as tl
        from triton.runtime import interpreter
    except ImportError:
        return
    builder = interpreter.InterpreterBuilder
    if getattr(builder, "_ssmkit_patched", False):
        return
    original_dot = builder.create_dot
    original_cast = builder.cast_impl

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        if a.dtype.scalar != tl.bfloat16 and b.dtype.scalar != tl.bfloat16:
            return original_dot(self, a, b, d, input_precision, max_num_imprecise_acc)
        a_data = _bf16_bits_to_f32(a.data) if a.dtype.scalar == tl.bfloat16 else a.data.astype(np.float32)
        b_data = _bf16_bits_to_f32(b.data) if b.dtype.scalar == tl.bfloat16 else b.data.astype(np.float32)
        out = np.matmul(a_data, b_data, dtype=np.float32).astype(d.data.dtype) + d.data
        return interpreter.TensorHandle(out, d.dtype.scalar)

    def cast_impl(self, src, dst_type):
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            rounded = torch.from_numpy(np.ascontiguousarray(src.data)).to(torch.bfloat16)
            return interpreter.TensorHandle(rounded.view(torch.int16).numpy().view(np.uint16), tl.bfloat16)
        return original_cast(self, src, dst_type)

    original_patch_tensor = interpreter._patch_lang_tensor

    def patch_lang_tensor(tensor, scope):
        original_patch_tensor(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.item()))

    builder.create_dot = create_dot
    builder.cast_impl = cast_impl
    interpreter._patch_lang_tensor = patch_lang_tensor
    builder._ssmkit_patched = True
