# Programmatic dependent launch (PDL, sm_90+). A kernel launched with ``launch_pdl=True`` may start while the kernel
# before it on the stream still runs: as soon as every program of that kernel has executed
# ``griddepcontrol.launch_dependents`` (or exited). Inside, ``griddepcontrol.wait`` blocks until that kernel has
# completed with its writes visible. So what the dependent does before its wait overlaps the predecessor: work that
# reads nothing the predecessor writes and writes nothing it reads. Inside a CUDA graph the launch attribute is
# captured as a programmatic edge. A kernel launched without PDL starts after its predecessor completed, and both
# instructions are then no-ops.
# Ordering: a kernel calls ``pdl_launch_dependents`` only where it was launched without PDL or after its own wait,
# so a dependent's early work may read what kernels two or more back on the stream wrote (they have completed),
# never what its predecessor writes; and every dependent has programs that reach the wait, so it never completes
# before its predecessor. (Tried on the Granite decode kernels in session 9 and removed: bench/granite/NOTES.md.)
"""Programmatic dependent launch for the Triton kernels (see the header comment for the ordering rules):
``pdl_wait`` / ``pdl_launch_dependents`` inside kernels, guarded by a constexpr so that the CPU interpreter, which
cannot run the PTX, skips them; ``pdl_applies`` and ``pdl_launch_option`` on the host."""
from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

__all__ = ["pdl_applies", "pdl_launch_dependents", "pdl_launch_option", "pdl_wait"]


@triton.jit
def pdl_wait(PDL: tl.constexpr):
    """With PDL: wait until the stream predecessor completed and its writes are visible (``griddepcontrol.wait``)."""
    if PDL:
        gdc_wait()


@triton.jit
def pdl_launch_dependents(PDL: tl.constexpr):
    """With PDL: let the next kernel on the stream start once every program got here or exited."""
    if PDL:
        gdc_launch_dependents()


@functools.lru_cache(maxsize=None)
def _sm90_or_newer(index: int) -> bool:
    return torch.cuda.get_device_capability(index)[0] >= 9


def pdl_applies(t: torch.Tensor, requested: bool = True) -> bool:
    """Whether kernels on ``t``'s device launch with PDL: ``requested`` and a CUDA device of compute capability 9.0
    or newer (CPU tensors, the interpreter's, never)."""
    return requested and t.is_cuda and _sm90_or_newer(t.get_device())


def pdl_launch_option(pdl: bool) -> dict:
    """Launch options for a kernel started by programmatic dependent launch: {"launch_pdl": True} when ``pdl``
    (``pdl_applies``), none otherwise (the interpreter takes none)."""
    return {"launch_pdl": True} if pdl else {}
