# Programmatic dependent launch (PDL, sm_90+): a kernel launched with ``launch_pdl=True`` may start while the
# kernel before it on the stream is still running -- as soon as every program of that kernel has executed
# ``griddepcontrol.launch_dependents`` (or exited) -- and waits inside the kernel, at ``griddepcontrol.wait``, for
# that kernel to complete with its writes visible. The time between two kernels (the launch and the
# predecessor's tail) then overlaps with the dependent's prologue, which may also load what no kernel in flight
# writes (parameters) before it waits. Inside a CUDA graph the launch attribute is captured as a programmatic edge.
#
# The rules every kernel here follows when launched with PDL (so that any chain of them stays ordered):
#   1. Before ``pdl_wait``: loads only. Every store comes after it (the predecessor may still read the buffer).
#   2. ``pdl_launch_dependents`` only after ``pdl_wait`` (or at the start of a kernel launched without PDL). So when
#      a kernel starts, its predecessor has passed its own wait and the kernel two back has completed: a load
#      before the wait may read what kernels two or more back wrote (the decode state kernel's prefetch of the
#      state the previous step wrote), never what the predecessor writes.
#   3. A kernel launched with PDL always reaches ``pdl_wait``, so it never completes before its predecessor.
# A kernel launched without PDL starts after its predecessor completed; the two instructions are then no-ops.
"""Programmatic dependent launch for the Triton kernels (see the header comment for the ordering rules):
``pdl_wait`` / ``pdl_launch_dependents`` inside kernels (constexpr-guarded, so that the CPU interpreter, which
cannot run the PTX, skips them) and ``pdl_applies`` on the host."""
from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

__all__ = ["pdl_applies", "pdl_launch_dependents", "pdl_wait"]


@triton.jit
def pdl_wait(PDL: tl.constexpr):
    """With PDL: wait until the stream predecessor completed and its writes are visible (``griddepcontrol.wait``)."""
    if PDL:
        gdc_wait()


@triton.jit
def pdl_launch_dependents(PDL: tl.constexpr):
    """With PDL: let the next kernel on the stream start (once every program got here or exited)."""
    if PDL:
        gdc_launch_dependents()


@functools.lru_cache(maxsize=None)
def _sm90_or_newer(index: int) -> bool:
    return torch.cuda.get_device_capability(index)[0] >= 9


def pdl_applies(t: torch.Tensor, requested: bool | None = True) -> bool:
    """Whether a kernel on ``t``'s device launches with PDL: ``requested`` (None counts as True) and a CUDA device
    of compute capability 9.0 or newer (CPU tensors, the interpreter's, never)."""
    return requested is not False and t.is_cuda and _sm90_or_newer(t.get_device())
