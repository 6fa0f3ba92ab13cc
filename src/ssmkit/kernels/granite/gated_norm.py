# Gated RMSNorm of the Granite mixer (spec §2.1 step 10, norm_before_gate=False): t = y * silu(z) in fp32,
# out = weight * t * rsqrt(mean(t^2 over all C channels) + eps), rounded once to bf16.
# Grid: (cdiv(b * L, BLOCK_T),); each program normalises BLOCK_T tokens, C channels as NUM_C blocks of BLOCK_C
# (C = 3072: 3 x 1024 by default; one next_pow2(C) = 4096 block, a quarter of it masked, was the session-3 form).
# Defaults 1 token x 3 blocks of 1024, 4 warps (H200, kernel alone, bench/results/session4/run8/
# granite_norm_bench.json: 83.7 us at 16384 rows, 69.6 us at 13,357, against 98.0 / 81.7 us for the old form).
import torch
import triton
import triton.language as tl

from ssmkit.kernels.granite.checks import check_shape_device


@triton.jit
def _gated_rmsnorm_kernel(
    y_ptr, stride_yb, stride_yl,  # y (b, L, C), channel stride 1
    z_ptr, stride_zb, stride_zl,  # gate (b, L, C), channel stride 1 (e.g. a slice of the in_proj output)
    w_ptr,  # (C,)
    mask_ptr, stride_mb, stride_ml,  # attention mask (b, L), nonzero = real token (HAS_MASK)
    out_ptr,  # (b, L, C) contiguous
    seqlen, nrows, nchan, eps,
    HAS_MASK: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_C: tl.constexpr, NUM_C: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    in_row = rows < nrows
    bi = (rows // seqlen).to(tl.int64)
    li = rows % seqlen
    real = in_row
    if HAS_MASK:  # pad rows are not read: their output is 0 (y = z = 0 there)
        real = tl.load(mask_ptr + bi * stride_mb + li * stride_ml, mask=in_row, other=0) != 0
    y_rows = y_ptr + (bi * stride_yb + li * stride_yl)[:, None]
    z_rows = z_ptr + (bi * stride_zb + li * stride_zl)[:, None]
    out_rows = out_ptr + rows.to(tl.int64)[:, None] * nchan
    # t = y * silu(z) block by block (NUM_C blocks of BLOCK_C channels cover C), kept for the second pass
    ts = ()
    ssq = tl.zeros((BLOCK_T,), dtype=tl.float32)
    for j in tl.static_range(NUM_C):
        offs_c = j * BLOCK_C + tl.arange(0, BLOCK_C)
        read = real[:, None] & (offs_c < nchan)[None, :]
        y = tl.load(y_rows + offs_c[None, :], mask=read, other=0.0).to(tl.float32)
        z = tl.load(z_rows + offs_c[None, :], mask=read, other=0.0).to(tl.float32)
        t = y * (z * tl.sigmoid(z))
        ssq += tl.sum(t * t, axis=1)
        ts = ts + (t,)
    rstd = tl.rsqrt(ssq / nchan + eps)
    for j in tl.static_range(NUM_C):
        offs_c = j * BLOCK_C + tl.arange(0, BLOCK_C)
        w = tl.load(w_ptr + offs_c, mask=offs_c < nchan, other=0.0).to(tl.float32)
        out = ts[j] * rstd[:, None] * w[None, :]
        tl.store(out_rows + offs_c[None, :], out.to(out_ptr.dtype.element_ty),
                 mask=in_row[:, None] & (offs_c < nchan)[None, :])


def gated_rmsnorm(y: torch.Tensor, z: torch.Tensor, weight: torch.Tensor, eps: float,
                  *, attention_mask: torch.Tensor | None = None, block_t: int = 1, block_c: int = 1024,
                  num_warps: int = 4) -> torch.Tensor:
    """Gated RMSNorm, gate before norm, statistics over all C channels (spec §2.1 step 10).

    Args:
        y: (b, L, C) fp32 or bf16 (the SSD output), channel stride 1, any row strides.
        z: (b, L, C) bf16 gate, channel stride 1, any row strides (the z slice of the in_proj output, no copy).
        weight: (C,) norm weight, any float dtype.
        eps: variance epsilon (rms_norm_eps).
        attention_mask: (b, L), nonzero for real tokens, or None; pad rows are written as 0 without reading y and z
            (exact: after padding masks #1 and #2, y = z = 0 there).
        block_t, num_warps: tokens and warps per program; block_c: channels per block (a power of two; blocks
            cover C, the last one masked if it sticks out).

    Returns:
        (b, L, C) bf16, contiguous: bf16(weight * t * rsqrt(mean(t^2) + eps)) with t = y * silu(z), all in fp32
        (the 5.17 prefill computes the same in fp32 and casts to bf16 once before out_proj).
    """
    if y.dim() != 3:
        raise ValueError(f"y: expected (b, L, C), got shape {tuple(y.shape)}")
    if y.stride(-1) != 1 or z.stride(-1) != 1:
        raise ValueError(f"y and z need a contiguous last dim, got strides {y.stride()} and {z.stride()}")
    if y.dtype not in (torch.float32, torch.bfloat16) or z.dtype not in (torch.float32, torch.bfloat16):
        raise TypeError(f"y, z: expected fp32 or bf16, got {y.dtype} and {z.dtype}")
    batch, seqlen, nchan = y.shape
    check_shape_device("z", z, y.shape, y.device)
    check_shape_device("weight", weight, (nchan,), y.device)
    if seqlen < 1:
        raise ValueError("y: expected at least one time step, got L = 0")
    if attention_mask is not None:
        check_shape_device("attention_mask", attention_mask, (batch, seqlen), y.device)
        if attention_mask.dtype == torch.bool:
            attention_mask = attention_mask.view(torch.uint8)
    out = torch.empty((batch, seqlen, nchan), device=y.device, dtype=torch.bfloat16)
    m = attention_mask if attention_mask is not None else out
    nrows = batch * seqlen
    _gated_rmsnorm_kernel[(triton.cdiv(nrows, block_t),)](
        y, y.stride(0), y.stride(1), z, z.stride(0), z.stride(1), weight,
        m, m.stride(0), m.stride(1), out,
        seqlen, nrows, nchan, float(eps),
        HAS_MASK=attention_mask is not None, BLOCK_T=block_t, BLOCK_C=block_c, NUM_C=triton.cdiv(nchan, block_c),
        num_warps=num_warps,
    )
    return out
