# The decode projections of the Granite mixer (in_proj 6448 x 1536, out_proj 1536 x 3072 at the real config) as
# skinny GEMMs out = x W^T for at most 64 rows of x (the batch's tokens), for FastMambaLayer.decode_projections.
# Every weight element is read once per call, so these are weight-bandwidth-bound (floors at 4.3 TB/s: in_proj
# 19.8 MB 4.6 us, out_proj 9.4 MB 2.2 us); fp32 accumulation, one rounding to bf16 (cuBLAS' numerics up to
# summation order). Two kernels:
#   _granite_decode_gemv_kernel, grid (cdiv(N, BLOCK_N),), x of at most 8 rows: no tensor cores; products
#     broadcast over (rows, BLOCK_N, BLOCK_K) and kept as per-lane partial sums over an unrolled K loop (every load
#     of the program's W slab can be in flight at once), reduced once.
#   _granite_decode_splitk_kernel, grid (cdiv(N, BLOCK_N), SPLIT): tl.dot of the (BLOCK_M >= 16, BLOCK_K) x tile
#     (rows padded) against (BLOCK_K, BLOCK_N) W tiles over one of SPLIT slices of K, software-pipelined. SPLIT > 1
#     spreads the weight over SPLIT times more programs (more bytes in flight: the unsplit form streamed the weight
#     at ~1 TB/s with 96-403 programs, bench/granite/NOTES.md "Session 5"); each program stores its fp32 partial
#     tile, and the last of a column block's SPLIT programs to arrive (an atomic counter per column block) sums the
#     SPLIT partials in slice order, so the result does not depend on the arrival order, and resets the counter.
# Both can write their result at an address posted in a MappedIO stash (a graph's output: no copy node), and the
# split-K kernel can read x from one (a graph's input: no copy-in node).
"""Skinny GEMMs for the decode projections (see the header comment): ``granite_decode_linear``."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ssmkit.kernels.common.mapped_io import posted_pointer
from ssmkit.kernels.granite.checks import check, is_pow2

__all__ = ["granite_decode_linear", "GEMV_MAX_ROWS"]


@triton.jit
def _decode_store_out(out_ptr, io_ptr, OUT_WORD: tl.constexpr, acc, offs_m, offs_n, stride_om, mask):
    """Store the (rows, BLOCK_N) fp32 result tile ``acc``, rounded to out's dtype, at rows offs_m and columns
    offs_n of out (row stride stride_om); OUT_WORD >= 0: out at the address posted in io_ptr[OUT_WORD]
    (``posted_pointer``), read here, by the storing program only."""
    out_ptr = posted_pointer(out_ptr, io_ptr, OUT_WORD)
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :], acc.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _granite_decode_gemv_kernel(x_ptr, w_ptr, out_ptr, io_ptr, M, N, stride_xm, stride_wn, stride_om,
                                K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                BLOCK_K: tl.constexpr, OUT_WORD: tl.constexpr):
    """out = x W^T; OUT_WORD >= 0: out is written at the address posted in io_ptr[OUT_WORD] (a MappedIO stash),
    with out_ptr's strides (``posted_pointer``)."""
    out_ptr = posted_pointer(out_ptr, io_ptr, OUT_WORD)
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    m_ok = offs_m[:, None] < M
    n_ok = offs_n[:, None] < N
    acc = tl.zeros((BLOCK_M, BLOCK_N, BLOCK_K), dtype=tl.float32)  # per-lane partial sums, reduced once at the end
    for k0 in tl.static_range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        k_ok = k[None, :] < K
        w = tl.load(w_ptr + offs_n[:, None] * stride_wn + k[None, :], mask=n_ok & k_ok, other=0.0).to(tl.float32)
        x = tl.load(x_ptr + offs_m[:, None] * stride_xm + k[None, :], mask=m_ok & k_ok, other=0.0).to(tl.float32)
        acc += x[:, None, :] * w[None, :, :]
    _decode_store_out(out_ptr, io_ptr, -1, tl.sum(acc, axis=2), offs_m, offs_n, stride_om,  # (resolved above)
                      m_ok & (offs_n[None, :] < N))


@triton.jit
def _granite_decode_splitk_kernel(x_ptr, w_ptr, out_ptr, part_ptr, count_ptr, io_ptr, M, N, stride_xm, stride_wn,
                                  stride_om, K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                  BLOCK_K: tl.constexpr, SPLIT: tl.constexpr, K_SLICE: tl.constexpr,
                                  STAGES: tl.constexpr, X_WORD: tl.constexpr, OUT_WORD: tl.constexpr):
    """out = x W^T, K in SPLIT slices of K_SLICE (whole BLOCK_K steps; trailing slices may be empty). part:
    (SPLIT, BLOCK_M, N) fp32 partial tiles; count: (cdiv(N, BLOCK_N),) int32, zero on entry and left zero (SPLIT >
    1). X_WORD / OUT_WORD >= 0: x is read from / out written to the address posted in io_ptr[word], with x_ptr's /
    out_ptr's strides."""
    pid_n = tl.program_id(0)
    pid_s = tl.program_id(1)
    x_ptr = posted_pointer(x_ptr, io_ptr, X_WORD)
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m[:, None] < M
    n_ok = offs_n[None, :] < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in tl.range(pid_s * K_SLICE, tl.minimum((pid_s + 1) * K_SLICE, K), BLOCK_K, num_stages=STAGES):
        k = k0 + offs_k
        x = tl.load(x_ptr + offs_m[:, None] * stride_xm + k[None, :], mask=m_ok & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + offs_n[None, :] * stride_wn + k[:, None], mask=n_ok & (k[:, None] < K), other=0.0)
        acc = tl.dot(x, w, acc)
    if SPLIT > 1:
        tile = offs_m[:, None].to(tl.int64) * N + offs_n[None, :]
        tl.store(part_ptr + pid_s.to(tl.int64) * BLOCK_M * N + tile, acc, mask=n_ok)
        tl.debug_barrier()  # every thread's partial stored before the arrival is counted (release)
        arrived = tl.atomic_add(count_ptr + pid_n, 1, sem="acq_rel")
        if arrived == SPLIT - 1:  # the last slice of this column block: sum the slices in order
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for s in tl.static_range(SPLIT):
                acc += tl.load(part_ptr + s * BLOCK_M * N + tile, mask=n_ok, other=0.0, cache_modifier=".cg")
            tl.store(count_ptr + pid_n, 0)
            _decode_store_out(out_ptr, io_ptr, OUT_WORD, acc, offs_m, offs_n, stride_om, m_ok & n_ok)
    else:
        _decode_store_out(out_ptr, io_ptr, OUT_WORD, acc, offs_m, offs_n, stride_om, m_ok & n_ok)


GEMV_MAX_ROWS = 8  # at most this many rows of x take the GEMV kernel
_GEMV_PRODUCT = 8192  # BLOCK_M * BLOCK_N * BLOCK_K of the GEMV: 64 fp32 products per thread at 4 warps


def granite_decode_linear(x: torch.Tensor, weight: torch.Tensor, *, kernel: str | None = None,
                          block_n: int | None = None, block_k: int = 256, split: int = 1, num_warps: int = 4,
                          num_stages: int = 3, posted_out: tuple[torch.Tensor, int] | None = None,
                          posted_x: tuple[torch.Tensor, int] | None = None,
                          counters: torch.Tensor | None = None) -> torch.Tensor:
    """``x @ weight.T`` for few rows: x (M, K) bf16 with M <= 64, weight (N, K) bf16; returns (M, N) bf16.

    Rows and the K axis need a contiguous last dim. ``kernel``: "gemv" (at most ``GEMV_MAX_ROWS`` rows) or
    "splitk"; None: "gemv" up to 8 rows, else "splitk".
    "gemv": ``block_n`` defaulting to 4 rows of W per program (H200, out_proj at B=1: 4.0 us vs 4.6 at 8 rows,
    5.2 at 16; bench/results/session6/run4/), its K step chosen so that a program holds ``_GEMV_PRODUCT``
    products (``block_k``, ``split`` and ``num_stages`` do not apply: the K loop is unrolled).
    "splitk": ``block_n`` defaulting to 32 for N > 4096 and 16 otherwise, ``block_k`` (a power of two >= 16) the K
    step, ``split`` the number of K slices (>= 1; each a whole number of K steps, so at most cdiv(K, block_k)),
    ``num_stages`` the software pipelining of the K loop (each stage holds a (M padded, block_k) x tile and a
    (block_k, block_n) W tile in shared memory: 192 KB at 64 rows, block_k 256, block_n 64 and 3 stages). With
    ``split`` > 1 ``counters`` is an int32 tensor of at least cdiv(N, block_n) zeros, left zero (pass one that
    outlives a captured graph's replays; None: a new one per call), and a (split, M padded to 16, N) fp32
    workspace is allocated.
    ``posted_out`` (stash, word): the result is written at the contiguous (M, N) destination whose address a
    MappedIO stash holds at that word (a graph's output, no copy node); the returned tensor is then an unwritten
    placeholder of the result's shape. ``posted_x`` (stash, word), "splitk" only: x is read at the address in that
    word instead, with x's layout (x is then a placeholder of the posted tensor's shape and strides).
    """
    check(x.dim() == 2 and weight.dim() == 2 and x.shape[1] == weight.shape[1], ValueError,
          f"expected x (M, K) and weight (N, K), got {tuple(x.shape)} and {tuple(weight.shape)}")
    check(x.dtype == torch.bfloat16 and weight.dtype == torch.bfloat16, TypeError,
          f"x and weight must be bfloat16, got {x.dtype} and {weight.dtype}")
    check(1 <= x.shape[0] <= 64, ValueError, f"at most 64 rows, got {x.shape[0]}")
    check(x.stride(1) == 1 and weight.stride(1) == 1, ValueError, "x and weight need a contiguous last dim")
    check(is_pow2(block_k) and block_k >= 16, ValueError, f"block_k must be a power of two >= 16, got {block_k}")
    check(block_n is None or is_pow2(block_n) and block_n <= 64, ValueError,
          f"block_n must be a power of two <= 64, got {block_n}")
    (m, k), n = x.shape, weight.shape[0]
    kernel = kernel or ("gemv" if m <= GEMV_MAX_ROWS else "splitk")
    check(kernel in ("gemv", "splitk"), ValueError, f"kernel must be 'gemv' or 'splitk', got {kernel!r}")
    check(kernel == "splitk" or m <= GEMV_MAX_ROWS, ValueError, f"the GEMV takes at most {GEMV_MAX_ROWS} rows")
    check(kernel == "splitk" or posted_x is None, ValueError, "posted_x needs kernel='splitk'")
    out = torch.empty(m, n, device=x.device, dtype=x.dtype)
    out_stash, out_word = posted_out if posted_out is not None else (out, -1)
    if kernel == "gemv":
        block_m = triton.next_power_of_2(m)
        block_n = block_n or 4
        gemv_k = min(triton.next_power_of_2(k), max(16, _GEMV_PRODUCT // (block_m * block_n)))
        _granite_decode_gemv_kernel[(triton.cdiv(n, block_n),)](
            x, weight, out, out_stash, m, n, x.stride(0), weight.stride(0), out.stride(0),
            K=k, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=gemv_k, OUT_WORD=out_word, num_warps=num_warps,
        )
        return out
    block_n = block_n or (32 if n > 4096 else 16)
    block_k = min(block_k, max(16, triton.next_power_of_2(k)))
    check(1 <= split <= triton.cdiv(k, block_k), ValueError,
          f"split must be in [1, cdiv(K, block_k) = {triton.cdiv(k, block_k)}], got {split}")
    block_m = max(16, triton.next_power_of_2(m))
    n_blocks = triton.cdiv(n, block_n)
    x_stash, x_word = posted_x if posted_x is not None else (out_stash, -1)
    check(posted_x is None or posted_out is None or x_stash is out_stash, ValueError,
          "posted_x and posted_out must use the same stash")
    k_slice = triton.cdiv(triton.cdiv(k, split), block_k) * block_k
    if split > 1:
        part = torch.empty(split * block_m * n, device=x.device, dtype=torch.float32)
        if counters is None:
            counters = torch.zeros(n_blocks, device=x.device, dtype=torch.int32)
        check(counters.dtype == torch.int32 and counters.numel() >= n_blocks and counters.device == x.device,
              ValueError, f"counters must be int32 with at least {n_blocks} elements on {x.device}")
    else:
        part = counters = out
    _granite_decode_splitk_kernel[(n_blocks, split)](
        x, weight, out, part, counters, x_stash, m, n, x.stride(0), weight.stride(0), out.stride(0),
        K=k, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, SPLIT=split, K_SLICE=k_slice, STAGES=num_stages,
        X_WORD=x_word, OUT_WORD=out_word, num_warps=num_warps,
    )
    return out
