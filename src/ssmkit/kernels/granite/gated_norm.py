# Gated RMSNorm of the Granite mixer (spec §2.1 step 10, norm_before_gate=False): t = y * silu(z) in fp32,
# out = weight * t * rsqrt(mean(t^2 over all C channels) + eps), rounded once to bf16.
# Grid: (cdiv(b * L, BLOCK_T),); each program normalises BLOCK_T tokens, C channels as NUM_C blocks of BLOCK_C
# (C = 3072: 3 x 1024 by default; one next_pow2(C) = 4096 block, a quarter of it masked, was the session-3 form).
# Defaults 1 token x 3 blocks of 1024, 4 warps (H200, kernel alone, bench/results/session4/run8/
# granite_norm_bench.json: 83.7 us at 16384 rows, 69.6 us at 13,357, against 98.0 / 81.7 us for the old form).
# Pre-gated form (HEAD_SUMSQ, session 9): the chunk scan has already formed t = y * silu(z) and the per-head sums
# of t^2 (ssd_chunked_prefill(gate=)), so the kernel reads t and H partial sums (~6.2 KB per token instead of 12).
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
    ssq_ptr,  # HEAD_SUMSQ: (b * L, HEADS) fp32 contiguous, per-head sums of t^2; y then holds t, z is not read
    seqlen, nrows, nchan, eps,
    HAS_MASK: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_C: tl.constexpr, NUM_C: tl.constexpr,
    HEAD_SUMSQ: tl.constexpr, HEADS: tl.constexpr, BLOCK_H: tl.constexpr,
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
    if HEAD_SUMSQ:  # the heads' partial sums (BLOCK_H >= HEADS lanes), added in a fixed order
        heads = tl.arange(0, BLOCK_H)
        part = tl.load(ssq_ptr + rows.to(tl.int64)[:, None] * HEADS + heads[None, :],
                       mask=real[:, None] & (heads < HEADS)[None, :], other=0.0)
        ssq = tl.sum(part, axis=1)
    for j in tl.static_range(NUM_C):
        offs_c = j * BLOCK_C + tl.arange(0, BLOCK_C)
        read = real[:, None] & (offs_c < nchan)[None, :]
        if HEAD_SUMSQ:
            t = tl.load(y_rows + offs_c[None, :], mask=read, other=0.0).to(tl.float32)
        else:
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


def gated_rmsnorm(y: torch.Tensor, z: torch.Tensor | None, weight: torch.Tensor, eps: float,
                  *, attention_mask: torch.Tensor | None = None, head_sumsq: torch.Tensor | None = None,
                  block_t: int = 1, block_c: int = 1024, num_warps: int = 4) -> torch.Tensor:
    """Gated RMSNorm, gate before norm, statistics over all C channels (spec §2.1 step 10).

    Args:
        y: (b, L, C) fp32 or bf16 (the SSD output), channel stride 1, any row strides; with ``head_sumsq``, t =
            y * silu(z) already formed (``ssd_chunked_prefill(gate=)``).
        z: (b, L, C) bf16 gate, channel stride 1, any row strides (the z slice of the in_proj output, no copy);
            None with ``head_sumsq``.
        weight: (C,) norm weight, any float dtype.
        eps: variance epsilon (rms_norm_eps).
        attention_mask: (b, L), nonzero for real tokens, or None; pad rows are written as 0 without reading y and z
            (exact: after padding masks #1 and #2, y = z = 0 there).
        head_sumsq: (b, L, H) fp32 contiguous, the sums of t^2 over each of H heads' C / H channels (the scan's),
            or None: then t and its statistics are formed here from y and z.
        block_t, num_warps: tokens and warps per program; block_c: channels per block (a power of two; blocks
            cover C, the last one masked if it sticks out).

    Returns:
        (b, L, C) bf16, contiguous: bf16(weight * t * rsqrt(mean(t^2) + eps)) with t = y * silu(z), all in fp32
        (the 5.17 prefill computes the same in fp32 and casts to bf16 once before out_proj).
    """
    if y.dim() != 3:
        raise ValueError(f"y: expected (b, L, C), got shape {tuple(y.shape)}")
    if (head_sumsq is None) == (z is None):
        raise ValueError("gated_rmsnorm: give either z (the gate) or head_sumsq (y then holds t), not both")
    gate = y if z is None else z
    if y.stride(-1) != 1 or gate.stride(-1) != 1:
        raise ValueError(f"y and z need a contiguous last dim, got strides {y.stride()} and {gate.stride()}")
    if y.dtype not in (torch.float32, torch.bfloat16) or gate.dtype not in (torch.float32, torch.bfloat16):
        raise TypeError(f"y, z: expected fp32 or bf16, got {y.dtype} and {gate.dtype}")
    batch, seqlen, nchan = y.shape
    check_shape_device("z", gate, y.shape, y.device)
    check_shape_device("weight", weight, (nchan,), y.device)
    heads = 1
    if head_sumsq is not None:
        heads = head_sumsq.shape[-1] if head_sumsq.dim() == 3 else 0
        check_shape_device("head_sumsq", head_sumsq, (batch, seqlen, heads), y.device)
        if head_sumsq.dtype != torch.float32 or not head_sumsq.is_contiguous() or heads < 1 or nchan % heads:
            raise ValueError(f"head_sumsq: expected contiguous fp32 (b, L, H) with H dividing C = {nchan}")
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
        y, y.stride(0), y.stride(1), gate, gate.stride(0), gate.stride(1), weight,
        m, m.stride(0), m.stride(1), out, head_sumsq if head_sumsq is not None else out,
        seqlen, nrows, nchan, float(eps),
        HAS_MASK=attention_mask is not None, BLOCK_T=block_t, BLOCK_C=block_c, NUM_C=triton.cdiv(nchan, block_c),
        HEAD_SUMSQ=head_sumsq is not None, HEADS=heads, BLOCK_H=triton.next_power_of_2(heads),
        num_warps=num_warps,
    )
    return out
