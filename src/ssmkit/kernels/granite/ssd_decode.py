# Granite Mamba-2 single-token decode step, between in_proj and out_proj (spec §3.1), in two or three Triton kernels:
#   1. _granite_decode_ssm_kernel, grid (headdim / BLOCK_P, nheads, batch): causal conv over the window
#      [conv_state[:, 1:], new xBC column] + bias + SiLU for the program's BLOCK_P x channels and its group's B and C
#      (2 * d_state channels, recomputed by every program of the row; conv_state is read-only here), dt =
#      softplus(dt + dt_bias) with the bf16 rounding of transformers 5.17, the in-place fp32 state update
#      S = S * exp(dt * A) + dt * x B^T on a (BLOCK_P, d_state) tile, y = S C + D x, and the gate y * silu(z),
#      written in fp32 to a (batch, intermediate) scratch row. The state is loaded and stored with an evict-first
#      L2 hint (evict_first, default): it is touched once per step.
#   2. _granite_decode_norm_roll_kernel, grid (batch, 1 + conv_dim / BLOCK_C): program 0 of each row does the
#      RMSNorm over all intermediate channels (spec §2.1 step 10) and writes the model-dtype result for out_proj;
#      the other programs roll conv_state left by one and write the new raw xBC column, in place (BLOCK_C channels
#      each, BLOCK_C dividing conv_dim). The roll waits for kernel 1, which read the old window, by stream order.
# The conv-apart form (conv_apart, for large batches: decode_conv_apart) runs _granite_decode_conv_roll_kernel,
# grid (batch, conv_dim / BLOCK_C), first: the conv + bias + SiLU of every xBC channel once per row (fp32, to a
# (batch, conv_dim) scratch) and the roll; kernel 1 then loads x, B and C from the scratch, and kernel 2 runs its
# norm programs only.
# Tiles: kernel 1 holds a (BLOCK_P, DSTATE) fp32 state tile (BLOCK_P chosen from the batch so that small batches
# still fill the GPU); kernel 2 a (next_pow2(intermediate),) row or a (BLOCK_C, D_CONV) window tile.
# The decode projections around these kernels are in decode_linear.py.
"""Fused single-token decode step of the Granite Mamba-2 mixer (spec §3.1).

Numerics (a choice the brief allows, stated here): the conv, SiLU, state update, readout, D skip, gate and RMSNorm
run in fp32 like mamba_ssm's ``selective_state_update`` (spec §4 item 5), not with 5.17's bf16 ``dB``, ``dBx``
and bf16 readout. That is closer to the float32 run of the reference than the reference itself is. The one
rounding kept from 5.17 is dt's (spec Decisions, §3.1 step 4): for a bf16 model ``dt + dt_bias`` and ``softplus``
are each rounded to bf16 (the prefill kernels' ``_granite_softplus_dt``), so the kernel sees the reference's dt
values. No time_step_limit clamp in decode (spec §3.1). The result is rounded once, to the model dtype, for
out_proj.
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from ssmkit.kernels.granite.checks import check, is_pow2
from ssmkit.kernels.granite.ssd_prefill import _granite_softplus_dt

__all__ = ["granite_decode_step", "decode_launch_config", "decode_conv_apart"]

# decode_conv_apart: the smallest batch whose decode step runs the conv in its own kernel by default (H200).
CONV_APART_MIN_BATCH = 16


@triton.jit
def _decode_window(new_ptr, state_ptr, ch, stride_cs_c, stride_cs_k, D_CONV: tl.constexpr):
    """(len(ch), D_CONV) model-dtype window [state[:, 1:], new] for channels ``ch`` (1D, in range): the conv's input
    and, written back, the rolled conv state. Reads only."""
    k = tl.arange(0, D_CONV)
    old = tl.load(state_ptr + ch[:, None] * stride_cs_c + (k[None, :] + 1) * stride_cs_k,
                  mask=k[None, :] < D_CONV - 1, other=0.0)
    new = tl.load(new_ptr + ch)
    return tl.where(k[None, :] == D_CONV - 1, new[:, None], old)


@triton.jit
def _decode_roll(state_ptr, ch, window, stride_cs_c, stride_cs_k, D_CONV: tl.constexpr):
    """conv_state[ch, :] <- ``window`` (the roll, spec §3.1 step 2), in place, once every thread of the program has
    read the old window (``_decode_window``)."""
    tl.debug_barrier()
    k = tl.arange(0, D_CONV)
    tl.store(state_ptr + ch[:, None] * stride_cs_c + k[None, :] * stride_cs_k, window)


@triton.jit
def _decode_conv_silu(window, weight_ptr, bias_ptr, ch, stride_cw_c, stride_cw_k, D_CONV: tl.constexpr,
                      HAS_CONV_BIAS: tl.constexpr):
    """fp32 silu(conv(window) + bias) for channels ``ch`` (1D), ``window`` from ``_decode_window``."""
    k = tl.arange(0, D_CONV)
    weight = tl.load(weight_ptr + ch[:, None] * stride_cw_c + k[None, :] * stride_cw_k).to(tl.float32)
    acc = tl.sum(window.to(tl.float32) * weight, axis=1)
    if HAS_CONV_BIAS:
        acc += tl.load(bias_ptr + ch).to(tl.float32)
    return acc * tl.sigmoid(acc)


@triton.jit
def _decode_conv_channels(new_ptr, state_ptr, weight_ptr, bias_ptr, ch, stride_cs_c, stride_cs_k, stride_cw_c,
                          stride_cw_k, D_CONV: tl.constexpr, HAS_CONV_BIAS: tl.constexpr):
    """fp32 silu(conv([state[:, 1:], new]) + bias) for channels ``ch`` (1D); reads only."""
    window = _decode_window(new_ptr, state_ptr, ch, stride_cs_c, stride_cs_k, D_CONV)
    return _decode_conv_silu(window, weight_ptr, bias_ptr, ch, stride_cw_c, stride_cw_k, D_CONV, HAS_CONV_BIAS)


@triton.jit
def _granite_decode_conv_roll_kernel(
    zxbcdt_ptr, conv_state_ptr, conv_weight_ptr, conv_bias_ptr, act_ptr,
    stride_zx_b, stride_cs_b, stride_cs_c, stride_cs_k, stride_cw_c, stride_cw_k, stride_act_b,
    INTERMEDIATE: tl.constexpr, D_CONV: tl.constexpr, BLOCK_C: tl.constexpr, HAS_CONV_BIAS: tl.constexpr,
):
    # The conv-apart form's first kernel: act = silu(conv(window) + bias) in fp32 for BLOCK_C channels of a row
    # (BLOCK_C divides conv_dim), then conv_state[c, :] <- window (the roll, spec §3.1 step 2), in place.
    row = tl.program_id(0).to(tl.int64)
    ch = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    cs_row = conv_state_ptr + row * stride_cs_b
    window = _decode_window(zxbcdt_ptr + row * stride_zx_b + INTERMEDIATE, cs_row, ch, stride_cs_c, stride_cs_k,
                            D_CONV)
    act = _decode_conv_silu(window, conv_weight_ptr, conv_bias_ptr, ch, stride_cw_c, stride_cw_k, D_CONV,
                            HAS_CONV_BIAS)
    tl.store(act_ptr + row * stride_act_b + ch, act)
    _decode_roll(cs_row, ch, window, stride_cs_c, stride_cs_k, D_CONV)


@triton.jit
def _granite_decode_ssm_kernel(
    zxbcdt_ptr, conv_state_ptr, conv_weight_ptr, conv_bias_ptr, act_ptr, dt_bias_ptr, a_log_ptr, d_ptr,
    ssm_state_ptr, gated_ptr,
    stride_zx_b, stride_cs_b, stride_cs_c, stride_cs_k, stride_cw_c, stride_cw_k, stride_act_b, stride_ss_b,
    stride_ss_h, stride_ss_p, stride_g_b,
    INTERMEDIATE: tl.constexpr, CONV_DIM: tl.constexpr, NGROUPS: tl.constexpr, HEADS_PER_GROUP: tl.constexpr,
    HEADDIM: tl.constexpr, DSTATE: tl.constexpr, D_CONV: tl.constexpr, BLOCK_P: tl.constexpr,
    HAS_CONV_BIAS: tl.constexpr, ROUND_BF16: tl.constexpr, EVICT_FIRST: tl.constexpr, CONV_APART: tl.constexpr,
):
    pid_p = tl.program_id(0)
    head = tl.program_id(1)
    row = tl.program_id(2).to(tl.int64)
    group = head // HEADS_PER_GROUP

    zx_row = zxbcdt_ptr + row * stride_zx_b
    xbc_row = zx_row + INTERMEDIATE
    cs_row = conv_state_ptr + row * stride_cs_b
    offs_p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    offs_n = tl.arange(0, DSTATE)
    x_ch = head * HEADDIM + offs_p
    b_ch = INTERMEDIATE + group * DSTATE + offs_n  # (xBC channels, as x_ch)
    c_ch = INTERMEDIATE + (NGROUPS + group) * DSTATE + offs_n

    # State tile first: the largest load, in flight while the conv and dt are computed. Evict-first (EVICT_FIRST):
    # the state is touched once per step, the projection weights read around this kernel should stay in L2.
    s_ptrs = ssm_state_ptr + row * stride_ss_b + head * stride_ss_h + offs_p[:, None] * stride_ss_p + offs_n[None, :]
    if EVICT_FIRST:
        state = tl.load(s_ptrs, eviction_policy="evict_first")
    else:
        state = tl.load(s_ptrs)

    if CONV_APART:  # x, B and C after the conv and SiLU, from _granite_decode_conv_roll_kernel (fp32)
        act_row = act_ptr + row * stride_act_b
        x = tl.load(act_row + x_ch)
        b_vec = tl.load(act_row + b_ch)
        c_vec = tl.load(act_row + c_ch)
    else:
        x = _decode_conv_channels(xbc_row, cs_row, conv_weight_ptr, conv_bias_ptr, x_ch, stride_cs_c, stride_cs_k,
                                  stride_cw_c, stride_cw_k, D_CONV, HAS_CONV_BIAS)
        b_vec = _decode_conv_channels(xbc_row, cs_row, conv_weight_ptr, conv_bias_ptr, b_ch, stride_cs_c,
                                      stride_cs_k, stride_cw_c, stride_cw_k, D_CONV, HAS_CONV_BIAS)
        c_vec = _decode_conv_channels(xbc_row, cs_row, conv_weight_ptr, conv_bias_ptr, c_ch, stride_cs_c,
                                      stride_cs_k, stride_cw_c, stride_cw_k, D_CONV, HAS_CONV_BIAS)

    # dt: 5.17 adds dt_bias and takes softplus in bf16 (spec §3.1 step 4): rounded after each for a bf16 model.
    dt_raw = tl.load(xbc_row + CONV_DIM + head).to(tl.float32)
    dt = _granite_softplus_dt(dt_raw, tl.load(dt_bias_ptr + head).to(tl.float32), ROUND_BF16)
    a = -tl.exp(tl.load(a_log_ptr + head).to(tl.float32))
    decay = tl.exp(dt * a)

    state = state * decay + (dt * x)[:, None] * b_vec[None, :]
    if EVICT_FIRST:
        tl.store(s_ptrs, state, eviction_policy="evict_first")
    else:
        tl.store(s_ptrs, state)

    y = tl.sum(state * c_vec[None, :], axis=1) + tl.load(d_ptr + head).to(tl.float32) * x
    z = tl.load(zx_row + x_ch).to(tl.float32)
    tl.store(gated_ptr + row * stride_g_b + x_ch, y * (z * tl.sigmoid(z)))


@triton.jit
def _granite_decode_norm_roll_kernel(
    gated_ptr, norm_weight_ptr, out_ptr, zxbcdt_ptr, conv_state_ptr, eps,
    stride_g_b, stride_out_b, stride_zx_b, stride_cs_b, stride_cs_c, stride_cs_k,
    INTERMEDIATE: tl.constexpr, D_CONV: tl.constexpr, BLOCK_I: tl.constexpr, BLOCK_C: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    blk = tl.program_id(1)
    if blk == 0:
        # RMSNorm of the gated row over all INTERMEDIATE channels (spec §2.1 step 10), fp32 stats.
        offs = tl.arange(0, BLOCK_I)
        m = offs < INTERMEDIATE
        t = tl.load(gated_ptr + row * stride_g_b + offs, mask=m, other=0.0)
        rstd = tl.rsqrt(tl.sum(t * t, axis=0) / INTERMEDIATE + eps)
        w = tl.load(norm_weight_ptr + offs, mask=m, other=0.0).to(tl.float32)
        tl.store(out_ptr + row * stride_out_b + offs, (t * rstd * w).to(out_ptr.dtype.element_ty), mask=m)
    else:
        # conv_state[c, :] <- [conv_state[c, 1:], xBC_new[c]] (spec §3.1 step 2), in place (BLOCK_C divides
        # conv_dim).
        ch = (blk - 1) * BLOCK_C + tl.arange(0, BLOCK_C)
        cs_row = conv_state_ptr + row * stride_cs_b
        window = _decode_window(zxbcdt_ptr + row * stride_zx_b + INTERMEDIATE, cs_row, ch, stride_cs_c, stride_cs_k,
                                D_CONV)
        _decode_roll(cs_row, ch, window, stride_cs_c, stride_cs_k, D_CONV)


def decode_conv_apart(batch: int, on_gpu: bool) -> bool:
    """Whether ``granite_decode_step`` runs the conv apart (its first kernel) by default at this batch: on the GPU
    from ``CONV_APART_MIN_BATCH`` rows; in the interpreter never (both forms are tested there explicitly).
    H200, session 21 (bench/results/session21/run1/, bench/granite/NOTES.md "Session 21"): the three launches
    against the two, alone in a graph, 60.6 -> 55.3-57.3 us at B=64, level at B=8 (9.8 / 9.7), +0.9 us at B=1;
    layer call (same process) 101.1 -> 95.0 us at B=64, 45.9 / 46.1 at B=8, 32.8 / 33.5 at B=1. Between them (run
    8, kernels alone): B=16 15.6 -> 14.9 us, B=32 33.0 -> 30.2; B=8 9.9 / 9.8 (level)."""
    return on_gpu and batch >= CONV_APART_MIN_BATCH


def decode_launch_config(batch: int, nheads: int, headdim: int, dstate: int, on_gpu: bool,
                         conv_apart: bool = False) -> tuple[int, int]:
    """(block_p, num_warps) of kernel 1: the state tile's rows per program and its warps.

    GPU (swept on the H200, bench/results/granite_decode_v2.json, kernels alone): 8 warps won at every batch;
    32 rows at B=8 and B=64 (B=64: 70.9 us vs 72.8 with 64 rows, 76.3 with 16), and smaller tiles for small
    batches so that the grid still has ~4 programs per SM (B=1: 8 rows, 10.0 us; within noise of 16 or 32 rows).
    Re-swept in session 6 with the evict-first hint (bench/results/session6/run7/granite_decode_sweep.json, 20 steps
    in a graph): B=64 32 rows x 8 warps 60.3 us, 64 x 8 59.9, 64 x 16 62.9, 16 x 8 66.3, 4-warp tiles 73-78; B=8
    32 x 8 9.7, 64 x 8 10.2, 16-row tiles 11.6-11.8; B=1 8 x 8 5.1, 8 x 4 5.4: the defaults stay.
    CPU interpreter, where each program costs milliseconds: whole heads. Rows are independent, but the conv's 4-tap
    sums and the readout's sum over d_state follow the warp layout: on the GPU other (block_p, num_warps) can round
    differently (in that sweep the state by up to 9.5e-7, the output by one bf16 step; bit-identical in the
    interpreter).
    The conv-apart form's state kernel (no conv in its programs) takes 8 rows x 4 warps (session 21 sweep at B=64,
    bench/results/session21/run1/sweep.json, the three launches in a graph of 20 steps: 8 x 4 55.3 us, 16 x 8 56.1,
    64 x 8 56.2, 32 x 8 57.3, 4 x 4 58.5; the fused form at its default 60.6).
    """
    if not on_gpu:
        return headdim, 4
    if conv_apart:
        return min(8, headdim), 4
    block = min(32, headdim)
    while block > 8 and batch * nheads * (headdim // block) < 4 * 132:
        block //= 2
    return block, 8


def granite_decode_step(zxbcdt: torch.Tensor, conv_state: torch.Tensor, ssm_state: torch.Tensor,
                        conv_weight: torch.Tensor, conv_bias: torch.Tensor | None, dt_bias: torch.Tensor,
                        A_log: torch.Tensor, D: torch.Tensor, norm_weight: torch.Tensor, eps: float,
                        out: torch.Tensor | None = None, gated: torch.Tensor | None = None, *,
                        evict_first: bool = True, block_p: int | None = None, num_warps: int | None = None,
                        conv_apart: bool | None = None) -> torch.Tensor:
    """One decode step of the mixer between the two projections; updates both caches in place.

    Args:
        zxbcdt: (b, in_proj_dim) in_proj output of the new token, model dtype (bf16 or fp32), last dim
            contiguous; in_proj_dim = intermediate + conv_dim + nheads, split [z | xBC | dt] (spec §1.1).
        conv_state: (b, conv_dim, d_conv) model dtype, the last d_conv raw xBC columns; rolled in place.
        ssm_state: (b, nheads, headdim, d_state) fp32, contiguous; updated in place.
        conv_weight: (conv_dim, 1, d_conv) or (conv_dim, d_conv); conv_bias: (conv_dim,) or None.
        dt_bias, A_log, D: (nheads,). norm_weight: (intermediate,). eps: RMSNorm epsilon.
        out: optional (b, intermediate) model-dtype output buffer; gated: optional (b, intermediate) fp32 scratch.
        evict_first: kernel 1 loads and stores the state with an evict-first L2 hint (H200, in a CUDA graph: 71.5 ->
            59.9 us at B=64; bench/results/session2/granite_decode_s2.json). The result does not depend on it.
        block_p, num_warps: kernel 1's tile rows (a power of two dividing headdim) and warps; None takes them
            from ``decode_launch_config``. For tuning; on the GPU they can change the rounding
            (``decode_launch_config``).
        conv_apart: the conv + SiLU of every xBC channel and the conv-state roll in a first kernel of their own
            (fp32 activations in a (b, conv_dim) scratch), so that the state kernel reads x, B and C instead of
            recomputing B and C's convs in each of its programs; three launches instead of two. None: from the
            batch (``decode_conv_apart``). On the GPU the form also sets the default tile (``decode_launch_config``),
            so the state and output can round differently (the conv's 4-tap sum and the readout's sum order; the
            state within a few fp32 roundings, bench/results/session21/); bit-identical in the interpreter.

    Returns:
        (b, intermediate) in the model dtype: RMSNorm(y * silu(z)) * norm_weight, ready for out_proj.
        n_groups = (conv_dim - intermediate) / (2 d_state); headdim, d_state and d_conv must be powers of two.
    """
    check(zxbcdt.dim() == 2, ValueError, f"zxbcdt must be (b, in_proj_dim), got shape {tuple(zxbcdt.shape)}")
    batch = zxbcdt.shape[0]
    check(ssm_state.dim() == 4 and ssm_state.shape[0] == batch, ValueError,
           f"ssm_state must be ({batch}, nheads, headdim, d_state), got {tuple(ssm_state.shape)}")
    _, nheads, headdim, dstate = ssm_state.shape
    intermediate = nheads * headdim
    check(conv_state.dim() == 3 and conv_state.shape[0] == batch, ValueError,
           f"conv_state must be ({batch}, conv_dim, d_conv), got {tuple(conv_state.shape)}")
    conv_dim, d_conv = conv_state.shape[1], conv_state.shape[2]
    ngroups = (conv_dim - intermediate) // (2 * dstate)
    check(ngroups >= 1 and conv_dim == intermediate + 2 * ngroups * dstate and nheads % ngroups == 0, ValueError,
           f"conv_dim {conv_dim} must be nheads*headdim ({intermediate}) + 2*n_groups*d_state with n_groups "
           f"dividing nheads {nheads}")
    check(zxbcdt.shape[1] == intermediate + conv_dim + nheads, ValueError,
           f"zxbcdt must have {intermediate + conv_dim + nheads} columns, got {zxbcdt.shape[1]}")
    check(all(is_pow2(v) for v in (headdim, dstate, d_conv)) and d_conv >= 2, ValueError,
           f"headdim, d_state and d_conv must be powers of two (d_conv >= 2), got {headdim}, {dstate}, {d_conv}")
    cw = conv_weight.reshape(conv_dim, d_conv) if conv_weight.dim() == 3 else conv_weight
    check(tuple(cw.shape) == (conv_dim, d_conv), ValueError,
           f"conv_weight must be ({conv_dim}, 1, {d_conv}), got {tuple(conv_weight.shape)}")
    for name, t, n in (("dt_bias", dt_bias, nheads), ("A_log", A_log, nheads), ("D", D, nheads),
                       ("norm_weight", norm_weight, intermediate)):
        check(t.dim() == 1 and t.shape[0] == n and t.stride(0) == 1, ValueError,
               f"{name} must be a contiguous ({n},) vector, got shape {tuple(t.shape)}")
    check(conv_bias is None or tuple(conv_bias.shape) == (conv_dim,) and conv_bias.stride(0) == 1, ValueError,
           f"conv_bias must be a contiguous ({conv_dim},) vector or None")
    check(ssm_state.dtype == torch.float32 and ssm_state.is_contiguous(), TypeError,
           f"ssm_state must be contiguous float32, got {ssm_state.dtype}, strides {ssm_state.stride()}")
    check(zxbcdt.stride(1) == 1, ValueError, "zxbcdt's last dim must be contiguous")
    check(zxbcdt.dtype in (torch.bfloat16, torch.float32), TypeError,
           f"zxbcdt must be bfloat16 or float32 (the model dtype), got {zxbcdt.dtype}")
    check(conv_state.dtype == zxbcdt.dtype, TypeError,
           f"conv_state dtype {conv_state.dtype} must equal the model dtype {zxbcdt.dtype}")
    if out is None:
        out = torch.empty(batch, intermediate, device=zxbcdt.device, dtype=zxbcdt.dtype)
    if gated is None:
        gated = torch.empty(batch, intermediate, device=zxbcdt.device, dtype=torch.float32)
    check(tuple(out.shape) == (batch, intermediate) and out.stride(1) == 1 and out.dtype == zxbcdt.dtype,
           ValueError, f"out must be ({batch}, {intermediate}) {zxbcdt.dtype} with a contiguous last dim")
    check(tuple(gated.shape) == (batch, intermediate) and gated.stride(1) == 1 and gated.dtype == torch.float32,
           ValueError, f"gated must be ({batch}, {intermediate}) float32 with a contiguous last dim")

    check(conv_apart in (None, False, True), ValueError,
          f"conv_apart must be None, False or True, got {conv_apart!r}")
    if conv_apart is None:
        conv_apart = decode_conv_apart(batch, zxbcdt.is_cuda)
    default_block_p, default_warps = decode_launch_config(batch, nheads, headdim, dstate, zxbcdt.is_cuda,
                                                          conv_apart)
    block_p = default_block_p if block_p is None else block_p
    num_warps = default_warps if num_warps is None else num_warps
    check(is_pow2(block_p) and headdim % block_p == 0, ValueError,
           f"block_p must be a power of two dividing headdim {headdim}, got {block_p}")
    conv_b = conv_bias if conv_bias is not None else cw
    # conv / roll channels per program: the largest power of two <= 512 dividing conv_dim (256 at the real config;
    # unmasked tiles, so a conv_dim with a small power-of-two factor gets more, smaller programs)
    block_c = math.gcd(conv_dim, 512)
    act = gated  # (a placeholder pointer when the conv is not apart: never read)
    if conv_apart:
        act = torch.empty(batch, conv_dim, device=zxbcdt.device, dtype=torch.float32)
        _granite_decode_conv_roll_kernel[(batch, conv_dim // block_c)](
            zxbcdt, conv_state, cw, conv_b, act,
            zxbcdt.stride(0), conv_state.stride(0), conv_state.stride(1), conv_state.stride(2), cw.stride(0),
            cw.stride(1), act.stride(0),
            INTERMEDIATE=intermediate, D_CONV=d_conv, BLOCK_C=block_c, HAS_CONV_BIAS=conv_bias is not None,
            num_warps=4,
        )
    _granite_decode_ssm_kernel[(headdim // block_p, nheads, batch)](
        zxbcdt, conv_state, cw, conv_b, act, dt_bias, A_log, D, ssm_state, gated,
        zxbcdt.stride(0), conv_state.stride(0), conv_state.stride(1), conv_state.stride(2), cw.stride(0),
        cw.stride(1), act.stride(0), ssm_state.stride(0), ssm_state.stride(1), ssm_state.stride(2), gated.stride(0),
        INTERMEDIATE=intermediate, CONV_DIM=conv_dim, NGROUPS=ngroups, HEADS_PER_GROUP=nheads // ngroups,
        HEADDIM=headdim, DSTATE=dstate, D_CONV=d_conv, BLOCK_P=block_p, HAS_CONV_BIAS=conv_bias is not None,
        ROUND_BF16=zxbcdt.dtype == torch.bfloat16, EVICT_FIRST=evict_first, CONV_APART=conv_apart,
        num_warps=num_warps,
    )
    block_i = triton.next_power_of_2(intermediate)
    # program 0 of a row: the norm; the others (not when the conv was apart: it rolled): the conv-state roll
    _granite_decode_norm_roll_kernel[(batch, 1 + (0 if conv_apart else conv_dim // block_c))](
        gated, norm_weight, out, zxbcdt, conv_state, float(eps),
        gated.stride(0), out.stride(0), zxbcdt.stride(0), conv_state.stride(0), conv_state.stride(1),
        conv_state.stride(2),
        INTERMEDIATE=intermediate, D_CONV=d_conv, BLOCK_I=block_i, BLOCK_C=block_c,
        num_warps=8 if block_i >= 2048 else 4,
    )
    return out
