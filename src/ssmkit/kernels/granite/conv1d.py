# Causal depthwise conv1d (K = 4) + bias + SiLU over the xBC slice of the in_proj output, for Granite prefill.
# Computes xBC[b, t, c] = silu(bias[c] + sum_k w[c, k] * raw[b, t - 3 + k, c]) in fp32, rounds once to bf16, and
# zeroes pad positions (spec §2.1 steps 6-7). Optionally writes the last 4 raw columns into a conv state.
# Grid: (cdiv(conv_dim, BLOCK_C), cdiv(L, BLOCK_L), batch), channel blocks fastest so that programs running
# together read and write whole rows; tiles BLOCK_L x BLOCK_C = 32 x 256 by default. Interior tiles (the tile and
# its 3 rows of history all real, a full channel block, no attention mask) take an unmasked path: Nsight Compute
# showed the kernel issue-bound at ~33 instructions per element (bench/granite/NOTES.md "Session 4"), much of it
# mask arithmetic. Since session 5 that path is a sliding window over time (_conv_rows_silu_store: each input row
# loaded once, every thread keeping its channels' window) instead of K shifted 2-D tile loads, and the masked path
# (edge tiles) runs in 8-row steps to bound registers. H200, kernel alone in a graph: 69.4 us at L = 16384 and 68.0
# us on the packed B=8 batch (session 4's 2-D interior tiles, 32 x 128: 85.7 / 87.8; without the interior path,
# 32 x 256: 101.6 / 120.7): bench/results/session5/run1/ and session4/run3/granite_conv_bench.json.
# Packed varlen layout (PACKED): a left-padded batch's real tokens only, rows one after another; position l of row
# b lives at packed row base[b] + l and is real from first[b] = L - len_b on. Loads before first[b] return 0 (the
# reference's masked values) and pad positions are not written (they do not exist in the packed output).
# Also here, as the layout's other half: _varlen_unpack_kernel, packed (T, d) -> padded (b, L, d) with 0 at pads,
# grid (cdiv(L, BLOCK_L), b), tiles BLOCK_L x BLOCK_D = 16 x 256 (the layer's out_proj output to its return value).
import torch
import triton
import triton.language as tl

from ssmkit.kernels.granite.checks import check_shape_device


@triton.jit
def _varlen_base(rows_ptr, pid_b, stride_b, stride_l, PACKED: tl.constexpr):
    """Element offset of row pid_b's position 0 in a tensor: pid_b * stride_b in the padded layout, base[b] *
    stride_l in the packed one (rows_ptr: (b, 2) int64 [base, first])."""
    if PACKED:
        return tl.load(rows_ptr + 2 * pid_b) * stride_l
    else:
        return pid_b * stride_b


@triton.jit
def _varlen_first(rows_ptr, pid_b, PACKED: tl.constexpr):
    """Row pid_b's first real position: first[b] in the packed layout, 0 in the padded one (where a mask, if
    any, tells the rest)."""
    if PACKED:
        return tl.load(rows_ptr + 2 * pid_b + 1)
    else:
        return pid_b * 0


@triton.jit
def _conv_rows_real(offs_l, seqlen, first, mask_row, stride_ml, HAS_MASK: tl.constexpr):
    """(in range, real) of positions offs_l: real = a real token (attention mask row, or from ``first`` on)."""
    valid_l = offs_l < seqlen
    if HAS_MASK:
        return valid_l, tl.load(mask_row + offs_l * stride_ml, mask=valid_l, other=0) != 0
    return valid_l, valid_l & (offs_l >= first)


@triton.jit
def _conv_tile_is_interior(pid_l, pid_c, first, seqlen, conv_dim, K: tl.constexpr, BLOCK_L: tl.constexpr,
                           BLOCK_C: tl.constexpr, ALLOWED: tl.constexpr):
    """Whether tile (pid_l, pid_c) may skip every mask: its rows and their K - 1 rows of history all lie in
    [first, seqlen), its channel block is full, and ALLOWED (the layout has no attention mask)."""
    inside = (pid_l * BLOCK_L - (K - 1) >= first) & ((pid_l + 1) * BLOCK_L <= seqlen)
    return inside & ((pid_c + 1) * BLOCK_C <= conv_dim) & ALLOWED


@triton.jit
def _conv_taps_silu(src, stride_sl, w_ptr, stride_wc, stride_wk, bias_ptr, offs_l, offs_c, first,
                    state_row, stride_ic, stride_ik, conv_dim, out_mask, K: tl.constexpr, HAS_BIAS: tl.constexpr,
                    HAS_STATE_IN: tl.constexpr, MASKED: tl.constexpr):
    """silu(bias + sum_k w[:, k] * raw[t - (K - 1) + k]) of a (BLOCK_L, BLOCK_C) tile in fp32. MASKED: positions
    before ``first`` read 0, positions t < 0 read the conv state row (HAS_STATE_IN; column K + t), channels past
    conv_dim and rows outside out_mask are not read; otherwise every load is unmasked (interior tiles)."""
    acc = tl.zeros((offs_l.shape[0], offs_c.shape[0]), dtype=tl.float32)
    if HAS_BIAS:
        if MASKED:
            acc += tl.load(bias_ptr + offs_c, mask=offs_c < conv_dim, other=0.0).to(tl.float32)[None, :]
        else:
            acc += tl.load(bias_ptr + offs_c).to(tl.float32)[None, :]
    for k in tl.static_range(K):
        # tap k multiplies the input at t - (K - 1) + k (PyTorch cross-correlation with left padding K - 1)
        t_in = offs_l - (K - 1) + k
        ptrs = src + t_in[:, None] * stride_sl + offs_c[None, :]
        if MASKED:
            w_k = tl.load(w_ptr + offs_c * stride_wc + k * stride_wk, mask=offs_c < conv_dim, other=0.0)
            x = tl.load(ptrs, mask=(t_in[:, None] >= first) & out_mask, other=0.0).to(tl.float32)
            if HAS_STATE_IN:
                # continuation: t < 0 reads the cached columns K + t of the conv state
                x += tl.load(state_row + offs_c[None, :] * stride_ic + (t_in[:, None] + K) * stride_ik,
                             mask=(t_in[:, None] < 0) & out_mask, other=0.0).to(tl.float32)
        else:
            w_k = tl.load(w_ptr + offs_c * stride_wc + k * stride_wk)
            x = tl.load(ptrs).to(tl.float32)
        acc += w_k.to(tl.float32)[None, :] * x
    return acc * tl.sigmoid(acc)


@triton.jit
def _conv_rows_silu_store(src, stride_sl, w_ptr, stride_wc, stride_wk, bias_ptr, out, stride_yl, l0, offs_c,
                          K: tl.constexpr, HAS_BIAS: tl.constexpr, BLOCK_L: tl.constexpr):
    """An interior tile (rows [l0, l0 + BLOCK_L), no masks) as a sliding window over time: each of its
    BLOCK_L + K - 1 input rows is loaded once as a (BLOCK_C,) vector, so every thread keeps its channels' window
    in registers (the 2-D form loads each row K times, shifted); output row r = silu(bias + sum_k w_k x[r + k]),
    stored as it is done. The same fp32 operations in the same order as ``_conv_taps_silu``: bit-identical."""
    ws = ()
    for k in tl.static_range(K):
        ws = ws + (tl.load(w_ptr + offs_c * stride_wc + k * stride_wk).to(tl.float32),)
    if HAS_BIAS:
        bias = tl.load(bias_ptr + offs_c).to(tl.float32)
    xs = ()
    for r in tl.static_range(BLOCK_L + K - 1):
        xs = xs + (tl.load(src + (l0 - (K - 1) + r) * stride_sl + offs_c),)
    for r in tl.static_range(BLOCK_L):
        acc = tl.zeros((offs_c.shape[0],), dtype=tl.float32)
        if HAS_BIAS:
            acc += bias
        for k in tl.static_range(K):
            acc += ws[k] * xs[r + k].to(tl.float32)
        tl.store(out + (l0 + r) * stride_yl + offs_c, (acc * tl.sigmoid(acc)).to(out.dtype.element_ty))


@triton.jit
def _conv1d_silu_kernel(
    src_ptr, stride_sb, stride_sl,  # raw xBC: (b, L, conv_dim), channel stride 1 (a slice of zxbcdt)
    w_ptr, stride_wc, stride_wk,  # weight (conv_dim, K)
    bias_ptr,  # (conv_dim,) or unused
    state_in_ptr, stride_ib, stride_ic, stride_ik,  # conv state (b, conv_dim, K) read for t < 0, or unused
    state_out_ptr, stride_ob, stride_oc, stride_ok,  # conv state written with the last K raw columns, or unused
    mask_ptr, stride_mb, stride_ml,  # attention mask (b, L), nonzero = real token, or unused
    out_ptr, stride_yb, stride_yl,  # output (b, L, conv_dim), channel stride 1
    rows_ptr,  # (b, 2) int64 [base, first] of the packed layout (PACKED), or unused
    seqlen, conv_dim,
    K: tl.constexpr,
    HAS_BIAS: tl.constexpr, HAS_STATE_IN: tl.constexpr, HAS_STATE_OUT: tl.constexpr, HAS_MASK: tl.constexpr,
    PACKED: tl.constexpr, INTERIOR_OK: tl.constexpr, INTERIOR_ROWS: tl.constexpr, BLOCK_L: tl.constexpr,
    BLOCK_C: tl.constexpr, SUB_L: tl.constexpr,
):
    pid_c = tl.program_id(0)
    pid_l = tl.program_id(1)
    pid_b = tl.program_id(2).to(tl.int64)
    offs_l = pid_l * BLOCK_L + tl.arange(0, BLOCK_L)
    offs_c = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    valid_c = offs_c < conv_dim
    first = _varlen_first(rows_ptr, pid_b, PACKED)
    src = src_ptr + _varlen_base(rows_ptr, pid_b, stride_sb, stride_sl, PACKED)
    out_row0 = out_ptr + _varlen_base(rows_ptr, pid_b, stride_yb, stride_yl, PACKED)
    valid_l, real = _conv_rows_real(offs_l, seqlen, first, mask_ptr + pid_b * stride_mb, stride_ml, HAS_MASK)
    if _conv_tile_is_interior(pid_l, pid_c, first, seqlen, conv_dim, K, BLOCK_L, BLOCK_C, INTERIOR_OK and not HAS_MASK):
        # Every row of the tile and its K - 1 rows of history are real positions: no masks (the common case).
        if INTERIOR_ROWS:
            _conv_rows_silu_store(src, stride_sl, w_ptr, stride_wc, stride_wk, bias_ptr, out_row0, stride_yl,
                                  pid_l * BLOCK_L, offs_c, K, HAS_BIAS, BLOCK_L)
        else:
            y = _conv_taps_silu(src, stride_sl, w_ptr, stride_wc, stride_wk, bias_ptr, offs_l, offs_c, first,
                                state_in_ptr, 0, 0, 0, None, K, HAS_BIAS, False, False)
            tl.store(out_row0 + offs_l[:, None] * stride_yl + offs_c[None, :], y.to(out_ptr.dtype.element_ty))
    elif tl.max(real.to(tl.int32), axis=0) == 0:
        # Only pad positions in this tile: the output is exactly 0 (mask #2) and the raw input need not be read.
        if not PACKED:
            tl.store(out_row0 + offs_l[:, None] * stride_yl + offs_c[None, :],
                     tl.zeros((BLOCK_L, BLOCK_C), dtype=out_ptr.dtype.element_ty),
                     mask=valid_l[:, None] & valid_c[None, :])
    else:
        # masked, SUB_L rows at a time (bounds the registers of this path when the interior tile is large)
        for r0 in tl.static_range(0, BLOCK_L, SUB_L):
            sub_l = pid_l * BLOCK_L + r0 + tl.arange(0, SUB_L)
            sub_valid, sub_real = _conv_rows_real(sub_l, seqlen, first, mask_ptr + pid_b * stride_mb, stride_ml,
                                                  HAS_MASK)
            out_mask = sub_valid[:, None] & valid_c[None, :]
            if PACKED:
                out_mask = out_mask & sub_real[:, None]  # pad positions do not exist in the packed output
            y = _conv_taps_silu(src, stride_sl, w_ptr, stride_wc, stride_wk, bias_ptr, sub_l, offs_c, first,
                                state_in_ptr + pid_b * stride_ib, stride_ic, stride_ik, conv_dim, out_mask, K,
                                HAS_BIAS, HAS_STATE_IN, True)
            y = tl.where(sub_real[:, None], y, 0.0)
            tl.store(out_row0 + sub_l[:, None] * stride_yl + offs_c[None, :], y.to(out_ptr.dtype.element_ty),
                     mask=out_mask)

    if HAS_STATE_OUT:
        if pid_l == 0:
            # new conv state column j = raw input at time L - K + j (from the cached state when that is < 0)
            offs_k = tl.arange(0, K)
            t_st = seqlen - K + offs_k
            st_mask = valid_c[:, None] & (offs_k[None, :] >= 0)
            col = tl.load(src + t_st[None, :] * stride_sl + offs_c[:, None],
                          mask=st_mask & (t_st[None, :] >= first), other=0.0).to(tl.float32)
            if HAS_STATE_IN:
                col += tl.load(state_in_ptr + pid_b * stride_ib + offs_c[:, None] * stride_ic
                               + (t_st[None, :] + K) * stride_ik,
                               mask=st_mask & (t_st[None, :] < 0), other=0.0).to(tl.float32)
            # state_out may alias state_in: every read of state_in in this program happens before this barrier
            tl.debug_barrier()
            tl.store(state_out_ptr + pid_b * stride_ob + offs_c[:, None] * stride_oc + offs_k[None, :] * stride_ok,
                     col.to(state_out_ptr.dtype.element_ty), mask=st_mask)


@triton.jit
def _varlen_unpack_kernel(
    src_ptr, stride_s,  # packed (T, d), row stride stride_s, channel stride 1
    rows_ptr,  # (b, 2) int64 [base, first] of the packed layout
    out_ptr,  # (b, L, d) contiguous; with OUT_INDIRECT an int64 holding the address of such a tensor
    seqlen,
    WIDTH: tl.constexpr, OUT_INDIRECT: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr,
):
    if OUT_INDIRECT:
        out_ptr = tl.load(out_ptr).to(tl.pointer_type(src_ptr.dtype.element_ty))
    pid_l = tl.program_id(0)
    pid_b = tl.program_id(1).to(tl.int64)
    src_row = _varlen_base(rows_ptr, pid_b, 0, stride_s, True)
    first = _varlen_first(rows_ptr, pid_b, True)
    offs_l = pid_l * BLOCK_L + tl.arange(0, BLOCK_L)
    valid_l = offs_l < seqlen
    real = valid_l & (offs_l >= first)  # pad rows: no load (other=0), zeros stored
    src = src_ptr + src_row + offs_l[:, None] * stride_s
    dst = out_ptr + (pid_b * seqlen + offs_l)[:, None] * WIDTH
    for d0 in tl.static_range(0, WIDTH, BLOCK_D):
        offs_d = d0 + tl.arange(0, BLOCK_D)
        valid_d = (offs_d < WIDTH)[None, :]
        v = tl.load(src + offs_d[None, :], mask=real[:, None] & valid_d, other=0.0)
        tl.store(dst + offs_d[None, :], v, mask=valid_l[:, None] & valid_d)


def unpack_varlen_rows(packed: torch.Tensor, packed_rows: torch.Tensor, seqlen: int, *,
                       out_address: torch.Tensor | None = None, block_l: int = 16, block_d: int = 256,
                       num_warps: int = 4) -> torch.Tensor | None:
    """The packed varlen layout back to the padded one: packed (T, d) (last dim contiguous) -> a new contiguous
    (b, L, d) of packed's dtype, row b's position l = packed[base[b] + l] from first[b] on and exactly 0 before.
    One pass: reads T rows, writes b * L rows (pads without reading). ``out_address``: a one-element int64 device
    tensor holding the address of a contiguous (b, L, d) tensor of packed's dtype (read by the kernel, e.g.
    ``MappedIO.dst_address``), written instead of a new tensor; then None is returned."""
    if packed.dim() != 2 or packed.stride(-1) != 1:
        raise ValueError(f"packed: expected (T, d) with a contiguous last dim, got shape {tuple(packed.shape)} "
                         f"strides {packed.stride()}")
    check_packed_rows(packed_rows, seqlen, packed.device)
    batch, width = packed_rows.shape[0], packed.shape[1]
    if out_address is not None and (out_address.dtype != torch.int64 or out_address.numel() != 1
                                    or out_address.device != packed.device):
        raise ValueError(f"out_address: expected one int64 on {packed.device}, got {out_address.dtype} "
                         f"{tuple(out_address.shape)} on {out_address.device}")
    out = torch.empty((batch, seqlen, width), device=packed.device, dtype=packed.dtype) if out_address is None \
        else None
    _varlen_unpack_kernel[(triton.cdiv(seqlen, block_l), batch)](
        packed, packed.stride(0), packed_rows, out if out is not None else out_address, seqlen,
        WIDTH=width, OUT_INDIRECT=out is None, BLOCK_L=block_l, BLOCK_D=block_d, num_warps=num_warps,
    )
    return out


def packed_layout_rows(lengths: torch.Tensor, seqlen: int) -> torch.Tensor:
    """The packed varlen layout of a left-padded batch: (b, 2) int64 [base, first] per row, where position l of
    row b (real from first = L - len_b on) is packed row base + l, base = (len_0 + ... + len_b) - L.

    Args:
        lengths: (b,) integer tensor of real tokens per row (on the kernels' device; no host sync).
        seqlen: L, the padded length.
    """
    lengths = lengths.to(torch.int64)
    return torch.stack([lengths.cumsum(0) - seqlen, seqlen - lengths], dim=1)


def check_packed_rows(packed_rows: torch.Tensor, seqlen: int | None, device: torch.device) -> None:
    """Raise unless ``packed_rows`` is a contiguous (b, 2) int64 tensor on ``device`` and seqlen an int >= 1.
    (Its values are not checked: that would need a device sync.)"""
    if packed_rows.dim() != 2 or packed_rows.shape[1] != 2 or packed_rows.dtype != torch.int64:
        raise ValueError(f"packed_rows: expected (b, 2) int64, got {tuple(packed_rows.shape)} {packed_rows.dtype}")
    if not packed_rows.is_contiguous() or packed_rows.device != device:
        raise ValueError(f"packed_rows: expected a contiguous tensor on {device}, got {packed_rows.device} "
                         f"strides {packed_rows.stride()}")
    if not isinstance(seqlen, int) or seqlen < 1:
        raise ValueError(f"seqlen: expected the padded length (int >= 1) with packed_rows, got {seqlen!r}")


def causal_conv1d_silu_prefill(
    zxbcdt: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    conv_state_in: torch.Tensor | None = None,
    attention_mask: torch.Tensor | None = None,
    conv_state_out: torch.Tensor | None = None,
    *,
    xbc_offset: int | None = None,
    packed_rows: torch.Tensor | None = None,
    seqlen: int | None = None,
    block_l: int = 32,
    block_c: int = 256,
    num_warps: int = 4,
    unmasked_interior: bool = True,
    interior_rows: bool = True,
    masked_rows: int | None = None,
) -> torch.Tensor:
    """Causal depthwise conv1d + bias + SiLU on the xBC slice of the in_proj output (spec §2.1 steps 6-7).

    Args:
        zxbcdt: (b, L, d) bf16 (or fp16/fp32), the in_proj output after padding mask #1, last dim contiguous; any
            row strides. Either the whole in_proj output (d = in_proj_dim) with ``xbc_offset`` = I (the xBC slice
            ``[I, I + conv_dim)`` is then read in place, strided, no copy), or the xBC slice view itself
            (``zxbcdt[..., I:I + conv_dim]``, d = conv_dim, ``xbc_offset`` None or 0).
        weight: (conv_dim, 1, K) or (conv_dim, K), any float dtype (upcast to fp32). K = 4 for Granite.
        bias: (conv_dim,) or None.
        conv_state_in: (b, conv_dim, K) raw columns of a previous call (continuation): the conv window at t < 0
            reads column K + t. None: zeros before t = 0 (prefill).
        attention_mask: (b, L), nonzero for real tokens; pad positions of the output are exactly 0 (mask #2).
        conv_state_out: (b, conv_dim, K), written with the last K raw (pre-conv) columns of concat(state, xBC)
            (zero-padded on the left when L < K and no state is given). May be the same tensor as conv_state_in.
        packed_rows: the packed varlen layout (``packed_layout_rows``), or None. Then zxbcdt is (T, d), the real
            tokens of a left-padded batch of ``seqlen`` positions per row, row after row; the attention mask is
            implied (must be None) and the output is packed the same way.
        seqlen: L, the padded length (only with packed_rows).
        block_l, block_c, num_warps: tile (time x channels) and warps per program.
        unmasked_interior: let interior tiles skip the masks (same results; False for A/B timing only).
        interior_rows: interior tiles as a sliding window over time (``_conv_rows_silu_store``: each input row
            loaded once; same results).
        masked_rows: rows per step of the masked path (a power of two dividing block_l; None: min(block_l, 8)): bounds
            its registers when a large tile suits the interior path.
        The defaults (32 x 256 tiles, 4 warps, sliding-window interior, masked path in 8-row steps) were the fastest
        on the H200 (bench/results/session5/run1/granite_conv_bench.json, kernel alone in a graph: 69.4 us at
        L = 16384, 68.0 us on the packed B=8 batch, against 85.7 / 87.8 for the session-4 default 32 x 128 2-D
        interior tiles; bit-identical outputs and conv states).

    Returns:
        xBC: (b, L, conv_dim) (packed: (T, conv_dim)), dtype of zxbcdt, contiguous.

    Numerics: conv + bias + SiLU in fp32, rounded once to the output dtype (the causal_conv1d kernel path, spec §4
    item 4). The 5.17 reference instead rounds the conv output to bf16 and takes SiLU in bf16; computing in fp32 and
    rounding once is closer to a float32 run of the same math than the reference is.
    """
    packed = packed_rows is not None
    if packed:
        if attention_mask is not None:
            raise ValueError("attention_mask must be None with packed_rows (the packed layout implies it)")
        if zxbcdt.dim() != 2:
            raise ValueError(f"zxbcdt: expected packed (T, d) with packed_rows, got shape {tuple(zxbcdt.shape)}")
        check_packed_rows(packed_rows, seqlen, zxbcdt.device)
        zxbcdt = zxbcdt[None]  # (1, T, d): the row stride is not used, rows come from packed_rows
    elif zxbcdt.dim() != 3:
        raise ValueError(f"zxbcdt: expected (b, L, d), got shape {tuple(zxbcdt.shape)}")
    if zxbcdt.dtype not in (torch.bfloat16, torch.float16, torch.float32):
        raise TypeError(f"zxbcdt: expected a float tensor, got {zxbcdt.dtype}")
    if zxbcdt.stride(-1) != 1:
        raise ValueError(f"zxbcdt: the last dim must be contiguous (stride 1), got strides {zxbcdt.stride()}")
    w = weight.squeeze(1) if weight.dim() == 3 else weight
    if w.dim() != 2:
        raise ValueError(f"weight: expected (conv_dim, 1, K) or (conv_dim, K), got {tuple(weight.shape)}")
    conv_dim, k = w.shape
    if packed:
        batch, d = packed_rows.shape[0], zxbcdt.shape[2]
    else:
        batch, seqlen, d = zxbcdt.shape
    if seqlen < 1:
        raise ValueError("zxbcdt: expected at least one time step, got L = 0")
    offset = 0 if xbc_offset is None else xbc_offset
    if xbc_offset is None and d != conv_dim:
        raise ValueError(f"xbc_offset is required when zxbcdt's last dim ({d}) differs from conv_dim ({conv_dim})")
    if offset < 0 or offset + conv_dim > d:
        raise ValueError(f"xBC slice [{offset}, {offset + conv_dim}) does not fit in zxbcdt's last dim {d}")
    check_shape_device("weight", w, (conv_dim, k), zxbcdt.device)
    if bias is not None:
        check_shape_device("bias", bias, (conv_dim,), zxbcdt.device)
    for name, state in (("conv_state_in", conv_state_in), ("conv_state_out", conv_state_out)):
        if state is not None:
            check_shape_device(name, state, (batch, conv_dim, k), zxbcdt.device)
    if attention_mask is not None:
        check_shape_device("attention_mask", attention_mask, (batch, seqlen), zxbcdt.device)
        if attention_mask.dtype == torch.bool:
            attention_mask = attention_mask.view(torch.uint8)

    sub_l = min(block_l, 8) if masked_rows is None else masked_rows
    if sub_l < 1 or block_l % sub_l or sub_l & (sub_l - 1):
        raise ValueError(f"masked_rows: expected a power of two dividing block_l = {block_l}, got {masked_rows}")
    src = zxbcdt[:, :, offset:offset + conv_dim]
    rows = zxbcdt.shape[:2] if packed else (batch, seqlen)  # (1, T) packed
    out = torch.empty((*rows, conv_dim), device=zxbcdt.device, dtype=zxbcdt.dtype)
    dummy = out
    si = conv_state_in if conv_state_in is not None else dummy.new_empty((1, 1, 1))
    so = conv_state_out if conv_state_out is not None else dummy.new_empty((1, 1, 1))
    m = attention_mask if attention_mask is not None else dummy.new_empty((1, 1))
    grid = (triton.cdiv(conv_dim, block_c), triton.cdiv(seqlen, block_l), batch)
    _conv1d_silu_kernel[grid](
        src, src.stride(0), src.stride(1),
        w, w.stride(0), w.stride(1),
        bias if bias is not None else w,
        si, si.stride(0), si.stride(1), si.stride(2),
        so, so.stride(0), so.stride(1), so.stride(2),
        m, m.stride(0), m.stride(1),
        out, out.stride(0), out.stride(1),
        packed_rows if packed else w,
        seqlen, conv_dim,
        K=k, HAS_BIAS=bias is not None, HAS_STATE_IN=conv_state_in is not None,
        HAS_STATE_OUT=conv_state_out is not None, HAS_MASK=attention_mask is not None, PACKED=packed,
        INTERIOR_OK=unmasked_interior, INTERIOR_ROWS=interior_rows, BLOCK_L=block_l, BLOCK_C=block_c, SUB_L=sub_l,
        num_warps=num_warps,
    )
    return out[0] if packed else out
