"""Triton kernels, one kernel family per file: ``ssmkit.kernels.granite`` (Mamba-2 mixer inference) and
``ssmkit.kernels.mamba3`` (Mamba-3 SISO training). Kernels import nothing from the harness.

Under ``TRITON_INTERPRET=1`` (CPU runs) the interpreter's bf16 defects and its ``range()`` over run-time bounds are
patched first (``ssmkit.kernels.interpreter``), so the kernels run on the CPU and compute what they compute on the
GPU."""
import os

if os.environ.get("TRITON_INTERPRET") == "1":
    from ssmkit.kernels.interpreter import patch_triton_interpreter

    patch_triton_interpreter()
