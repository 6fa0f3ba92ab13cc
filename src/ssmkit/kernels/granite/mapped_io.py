# Copies between a captured CUDA graph's static buffers and caller tensors whose addresses change every replay.
# A graph bakes in its kernels' pointer arguments, so a graph-backed call normally pays a copy_ launch into the
# static input before the replay and a clone of the static output after it (host time the harness counts in full:
# bench/granite/NOTES.md "Session 3: decode I/O"). Here the two addresses travel through a 3-word table in pinned
# host memory instead, which the GPU reads directly (unified addressing: a pinned allocation has one address for
# host and device):
#   table (pinned int64, host writes): [src, dst, seq]
#   stash (device int64):              [dst, seq], written by the copy-in kernel, read by the copy-out kernel
#   ack   (pinned int64, GPU writes):  seq of the last replay whose copy-out has run
# _mapped_copy_in_kernel (the graph's first node) copies src -> the static input, program 0 stashes dst and seq;
# _mapped_copy_out_kernel (the last node) copies the static output -> dst, program 0 writes ack. The table is
# free for the next call once ack equals the last posted seq (every copy-in program has read it by then, stream
# order); ``MappedIO.post`` waits for that before writing.
"""Host-mapped address table for graph inputs and outputs that change per replay (see the header comment)."""
from __future__ import annotations

import time

import torch
import triton
import triton.language as tl

__all__ = ["MappedIO"]

_BLOCK = 1024
# How long ``MappedIO.post`` waits for the previous replay's ack before synchronising the stream.
_SPIN_S = 0.05


@triton.jit
def _mapped_copy_in_kernel(table_ptr, stash_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out[:n] = (*table[0])[:n]; program 0 stashes table[1] (dst) and table[2] (seq) in device memory."""
    src = tl.load(table_ptr).to(tl.pointer_type(out_ptr.dtype.element_ty))
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)
    if tl.program_id(0) == 0:
        tl.store(stash_ptr, tl.load(table_ptr + 1))
        tl.store(stash_ptr + 1, tl.load(table_ptr + 2))


@triton.jit
def _mapped_copy_out_kernel(stash_ptr, ack_ptr, in_ptr, n, BLOCK: tl.constexpr):
    """(*stash[0])[:n] = in[:n]; program 0 writes ack = stash[1] (the replay's seq) to host-mapped memory."""
    dst = tl.load(stash_ptr).to(tl.pointer_type(in_ptr.dtype.element_ty))
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(in_ptr + offs, mask=offs < n), mask=offs < n)
    if tl.program_id(0) == 0:
        tl.store(ack_ptr, tl.load(stash_ptr + 1))


class MappedIO:
    """One table for one captured graph: ``copy_in`` / ``copy_out`` are launched inside the captured body, ``post``
    runs before each replay.

    ``pinned``: allocate the table and ack in pinned host memory (required on CUDA: the GPU reads them there). On
    the CPU (TRITON_INTERPRET=1 tests) plain host tensors behave the same.
    """

    def __init__(self, device: torch.device) -> None:
        pinned = torch.device(device).type == "cuda"
        self.device = torch.device(device)
        self.table = torch.zeros(3, dtype=torch.int64, pin_memory=pinned)
        self.ack = torch.zeros(1, dtype=torch.int64, pin_memory=pinned)
        self.stash = torch.zeros(2, dtype=torch.int64, device=device)
        self._table = self.table.numpy()
        self._ack = self.ack.numpy()
        self.seq = 0

    def copy_in(self, static_in: torch.Tensor) -> None:
        """Launch: static_in (contiguous) <- the tensor at the posted src address (same numel and dtype)."""
        n = static_in.numel()
        _mapped_copy_in_kernel[(triton.cdiv(n, _BLOCK),)](self.table, self.stash, static_in, n, BLOCK=_BLOCK)

    def copy_out(self, static_out: torch.Tensor) -> None:
        """Launch: the tensor at the posted dst address <- static_out (contiguous; same numel and dtype)."""
        n = static_out.numel()
        _mapped_copy_out_kernel[(triton.cdiv(n, _BLOCK),)](self.stash, self.ack, static_out, n, BLOCK=_BLOCK)

    def post(self, src: torch.Tensor, dst: torch.Tensor) -> None:
        """Publish the addresses of the next replay: ``src`` (read by copy_in) and ``dst`` (written by copy_out),
        both contiguous with the static buffers' numel and dtype, alive until the replay has run (stream order
        guarantees that for tensors of the current stream). Waits first until the previous replay has consumed
        the table (spinning briefly, then synchronising the stream)."""
        if self._ack[0] != self.seq:
            deadline = time.monotonic() + _SPIN_S
            while self._ack[0] != self.seq and time.monotonic() < deadline and self.device.type == "cuda":
                pass
            if self._ack[0] != self.seq and self.device.type == "cuda":
                torch.cuda.current_stream(self.device).synchronize()
            if self._ack[0] != self.seq:
                raise RuntimeError(f"MappedIO: posted replay {self.seq} has not run its copy-out (ack "
                                   f"{int(self._ack[0])}); post once per replay of the graph holding the copies")
        self.seq += 1
        table = self._table
        table[0], table[1], table[2] = src.data_ptr(), dst.data_ptr(), self.seq
