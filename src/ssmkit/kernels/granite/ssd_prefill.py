# Chunked SSD (Mamba-2 state-space duality) prefill for Granite: G = 1, specialised for P = 64, N = 128, chunk 256
# (block sizes are constexprs, so tests run it at tiny P/N/chunk). Three launches (spec §2.1 step 9):
#   1. _ssd_chunk_state_kernel, grid (H, chunks, b): dt = softplus(dt_raw + dt_bias) with 5.17's bf16 rounding,
#      the in-chunk cumsum of A*dt (stored, fp32), and the chunk's local state sum_s (x_s w_s) B_s^T, (P, N) fp32,
#      in one pass over BLOCK_K = 64 token blocks (tl.dot, rescaled per block; the weights on x, the smaller tile,
#      that fp32 operand as two bf16 terms, B the exact bf16 one).
#      Programs of head 0 (or all heads, cb_spread) also store C.B^T of the chunk (causal blocks only, fp32),
#      shared by all heads in launch 3.
#   2. _ssd_state_pass_kernel, grid (P*N / BLOCK_S, H, b): the sequential recurrence over chunks, writing the state
#      entering each chunk and the final state (fp32).
#   3. _ssd_chunk_scan_kernel, grid (H / HEADS, chunks * CH / BLOCK_M, b): y = C.state * exp(cs) + (CB o decay o dt) @ x
#      + D x, BLOCK_M = 64 rows per program, causal column blocks only; the off-diagonal blocks' decay factored into a
#      row and a column vector (no tile of exponents there).
# The fused-state form (fused_state; by default for batches with enough rows) replaces launches 1-2 with
#   1'. _ssd_chunk_prep_kernel, grid (H + causal C.B^T blocks, chunks, b): dt and the cumsum per head; C.B^T blocks;
#   2'. _ssd_state_fused_kernel, grid (N / BLOCK_N, H, b): chunk states and their passing in one sequential pass
#       (no local states in memory), writing the entering and final states.
# Fully padded chunks (no real token in the attention mask) skip the matrix work: x = B = C = 0 there (mask #2), so
# their local state and outputs are exactly 0 whatever the entering state; the decay through them is still applied.
# Packed varlen layout (PACKED, see conv1d.py): xBC, dt_raw and y hold a left-padded batch's real tokens only, row
# b's position l at packed row base[b] + l; loads before the row's first real token return 0 (the reference's
# masked values; dt_raw = 0 gives the pads' decay softplus(dt_bias)) and y is not written there.
import torch
import triton
import triton.language as tl

from ssmkit.kernels.granite.checks import check_shape_device
from ssmkit.kernels.granite.conv1d import _varlen_base, _varlen_first, check_packed_rows

# Launch options of the unmasked layouts (padded and packed) on the GPU: registers capped at 128 so that 4 programs
# of 4 warps fit an SM (168 and 145 registers allowed 3; the chunk-state kernel's 74 KB of shared memory at 3 stages
# too, hence 2 stages). H200, kernels alone in a graph, bit-identical results: session 5 (padded B=1; the packed
# batch was then +9 us with the caps, bench/results/session5/run4/granite_ssd_ab.json) 437 -> 404 us at L = 16384,
# 118.6 -> 115.2 us at 4096; session 10 (after the x-side weights in the chunk state and the factored scan decay,
# bench/results/session10/run2/granite_ssd_ab.json) the packed varlen batch 446 -> 382 us with them (the padded
# L = 4096 104.6 uncapped against 107.6: kept capped for L = 16384's 387 -> 379). The masked layout (not measured)
# keeps Triton's defaults.
_UNMASKED_LAUNCH = {"scan": dict(maxnreg=128), "state": dict(maxnreg=128, num_stages=2)}


def ssd_launch_options(device: torch.device, masked: bool, launch: dict[str, dict] | None = None) -> dict[str, dict]:
    """Triton launch options per SSD kernel ("state", "pass", "scan"; "prep", "fused" with fused_state):
    ``_UNMASKED_LAUNCH`` on CUDA for the unmasked layouts (padded or packed), none otherwise; a kernel's key in
    ``launch`` replaces its options."""
    opts = {"state": {}, "pass": {}, "scan": {}, "prep": {}, "fused": {}}
    if device.type == "cuda" and not masked:
        opts.update(_UNMASKED_LAUNCH)
    opts.update(launch or {})
    return opts


# fused_state=None: the fused form from this many (row, head) chains (4 rows of the real config, an estimate: the
# measured win is at 8 rows of at most 16 chunks, a row alone loses at any block_n; ssd_chunked_prefill)
FUSED_STATE_MIN_CHAINS = 192


# dot precision codes (PREC constexpr): operands rounded to bf16, or fp32 operands through tf32 / 3xtf32 / ieee
PREC_BF16, PREC_TF32, PREC_TF32X3, PREC_IEEE = 0, 1, 2, 3


@triton.jit
def _ssd_dot(a, b, acc, PREC: tl.constexpr):
    """acc + a @ b with the operand precision PREC (fp32 accumulation)."""
    if PREC == 0:
        return tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16), acc)
    elif PREC == 1:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="tf32")
    elif PREC == 2:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="tf32x3")
    else:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")


@triton.jit
def _granite_softplus_dt(dt_raw, dt_bias, ROUND_BF16: tl.constexpr):
    """dt = softplus(dt_raw + dt_bias) (torch threshold 20), fp32 in and out.

    With ROUND_BF16, dt_bias, the sum and the softplus are each rounded to bf16, as transformers 5.17 computes them
    in bf16 (spec "Decisions", §2.1 step 9.1). log1p is evaluated accurately (no cancellation for large -v).
    """
    if ROUND_BF16:
        dt_bias = dt_bias.to(tl.bfloat16).to(tl.float32)
    v = dt_raw + dt_bias
    if ROUND_BF16:
        v = v.to(tl.bfloat16).to(tl.float32)
    u = tl.exp(v)
    w = 1.0 + u
    log1p_u = tl.where(w == 1.0, u, tl.log(w) * (u / (w - 1.0)))
    sp = tl.where(v > 20.0, v, log1p_u)
    if ROUND_BF16:
        sp = sp.to(tl.bfloat16).to(tl.float32)
    return sp


@triton.jit
def _chunk_has_tokens(mask_ptr, stride_mb, stride_ml, pid_b, chunk_start, seqlen, first,
                      HAS_MASK: tl.constexpr, CH: tl.constexpr):
    """Whether chunk [chunk_start, chunk_start + CH) of row pid_b holds a real token: per the mask, or at or after
    position ``first`` (the packed layout's first real token; 0 otherwise)."""
    if HAS_MASK:
        t = chunk_start + tl.arange(0, CH)
        m = tl.load(mask_ptr + pid_b * stride_mb + t * stride_ml, mask=t < seqlen, other=0)
        return tl.max((m != 0).to(tl.int32), axis=0) > 0
    else:
        return (chunk_start < seqlen) & (chunk_start + CH > first)


@triton.jit
def _dt_cumsum_block(dt_row, stride_dl, h, t, seqlen, first, dt_bias, A, offset, out_ptr,
                     ROUND_DT: tl.constexpr, BLOCK_K: tl.constexpr):
    """dt and the running in-chunk cumsum of A*dt over token block t (offset = cumsum before the block; dt = 0 past
    L; dt_raw = 0 before ``first``), both stored at out_ptr (dt) and out_ptr + STRIDE (cs) for launches 2 and 3.
    dt_row: dt_raw of the row's position 0. Returns dt, cs, cs at the block's last position."""
    valid = t < seqlen
    raw = tl.load(dt_row + t * stride_dl + h, mask=valid & (t >= first), other=0.0).to(tl.float32)
    dt = tl.where(valid, _granite_softplus_dt(raw, dt_bias, ROUND_DT), 0.0)
    cs = tl.cumsum(dt * A, axis=0) + offset
    offs = tl.arange(0, BLOCK_K)
    tl.store(out_ptr + 2 * offs, dt)
    tl.store(out_ptr + 2 * offs + 1, cs)
    return dt, cs, tl.sum(tl.where(offs == BLOCK_K - 1, cs, 0.0), axis=0)


@triton.jit
def _dt_cumsum_chunk(dt_row, stride_dl, h, chunk_start, seqlen, first, dt_bias, A, out_ptr,
                     ROUND_DT: tl.constexpr, CH: tl.constexpr, BLOCK_K: tl.constexpr):
    """``_dt_cumsum_block`` over every token block of the chunk at chunk_start (dt and the cumsum stored at out_ptr,
    the chunk's slot), for programs that need nothing else of them."""
    offs_k = tl.arange(0, BLOCK_K)
    cs_end = A * 0.0
    for k in range(0, CH, BLOCK_K):
        _, _, cs_end = _dt_cumsum_block(dt_row, stride_dl, h, chunk_start + k + offs_k, seqlen, first, dt_bias, A,
                                        cs_end, out_ptr + 2 * k, ROUND_DT, BLOCK_K)


@triton.jit
def _ssd_store_cb_block(xbc, stride_xl, cb, i, j, chunk_start, seqlen, first, nheads,
                        P: tl.constexpr, N: tl.constexpr, CH: tl.constexpr, BLOCK_K: tl.constexpr):
    """C.B^T of one chunk, rows i .. i + BLOCK_K against columns j .. j + BLOCK_K (exact products of the bf16
    operands, fp32 sums), stored at cb (the chunk's (CH, CH) fp32 tile); tokens outside [first, seqlen) read 0."""
    offs_k = tl.arange(0, BLOCK_K)
    offs_n = tl.arange(0, N)
    ti = chunk_start + i + offs_k
    tj = chunk_start + j + offs_k
    c_i = tl.load(xbc + ti[:, None] * stride_xl + (nheads * P + N + offs_n)[None, :],
                  mask=((ti < seqlen) & (ti >= first))[:, None], other=0.0)
    b_t = tl.load(xbc + tj[None, :] * stride_xl + (nheads * P + offs_n)[:, None],
                  mask=((tj < seqlen) & (tj >= first))[None, :], other=0.0)
    blk = tl.dot(c_i, b_t, tl.zeros((BLOCK_K, BLOCK_K), dtype=tl.float32))
    tl.store(cb + (i + offs_k)[:, None] * CH + (j + offs_k)[None, :], blk)


@triton.jit
def _ssd_chunk_state_kernel(
    xbc_ptr, stride_xb, stride_xl,  # xBC (b, L, H*P + 2N), channel stride 1
    dt_ptr, stride_db, stride_dl,  # dt_raw (b, L, H), head stride 1
    dt_bias_ptr, a_log_ptr,
    mask_ptr, stride_mb, stride_ml,
    dtcs_ptr,  # (b, H, chunks * CH, 2) fp32: dt, in-chunk cumsum of A*dt
    states_ptr,  # (b, chunks, H, P, N) fp32
    cb_ptr,  # (b, chunks, CH, CH) fp32 (STORE_CB)
    rows_ptr,  # (b, 2) int64 [base, first] of the packed layout (PACKED), or unused
    seqlen, nheads, nchunks,
    P: tl.constexpr, N: tl.constexpr, CH: tl.constexpr, BLOCK_K: tl.constexpr,
    HAS_MASK: tl.constexpr, ROUND_DT: tl.constexpr, STORE_CB: tl.constexpr, CB_SPREAD: tl.constexpr,
    PREC: tl.constexpr, SPLIT_STATE: tl.constexpr, PACKED: tl.constexpr,
):
    h = tl.program_id(0)  # heads fastest: the programs of one chunk run together and share B (and C) in L2
    c = tl.program_id(1)
    pid_b = tl.program_id(2).to(tl.int64)
    chunk_start = c * CH
    A = -tl.exp(tl.load(a_log_ptr + h).to(tl.float32))
    dt_bias = tl.load(dt_bias_ptr + h).to(tl.float32)
    aux = dtcs_ptr + (((pid_b * nheads + h) * nchunks + c) * CH) * 2
    offs_k = tl.arange(0, BLOCK_K)
    cs_end = A * 0.0  # cumsum at the end of the previous block
    first = _varlen_first(rows_ptr, pid_b, PACKED)
    xbc_row = _varlen_base(rows_ptr, pid_b, stride_xb, stride_xl, PACKED)
    dt_row = dt_ptr + _varlen_base(rows_ptr, pid_b, stride_db, stride_dl, PACKED)

    if _chunk_has_tokens(mask_ptr, stride_mb, stride_ml, pid_b, chunk_start, seqlen, first, HAS_MASK, CH):
        xbc = xbc_ptr + xbc_row
        offs_p = tl.arange(0, P)
        offs_n = tl.arange(0, N)
        # One pass, rescaled as it goes: after block k, acc = sum_{s <= end_k} (x_s dt_s exp(cs_end_k - cs_s)) B_s^T,
        # so every exponent is <= 0; at the end acc is the chunk's local state.
        acc = tl.zeros((P, N), dtype=tl.float32)
        for k in range(0, CH, BLOCK_K):
            t = chunk_start + k + offs_k
            valid = (t < seqlen) & (t >= first)
            dt, cs, new_end = _dt_cumsum_block(dt_row, stride_dl, h, t, seqlen, first, dt_bias, A, cs_end,
                                               aux + 2 * k, ROUND_DT, BLOCK_K)
            w = tl.exp(new_end - cs) * dt
            x_t = tl.load(xbc + t[None, :] * stride_xl + (h * P + offs_p)[:, None], mask=valid[None, :], other=0.0)
            b_s = tl.load(xbc + t[:, None] * stride_xl + (nheads * P + offs_n)[None, :], mask=valid[:, None],
                          other=0.0)
            # the weights go on x (P x BLOCK_K, half B's size), B stays the exact bf16 operand
            xw = x_t.to(tl.float32) * w[None, :]
            acc = _ssd_dot(xw, b_s, acc * tl.exp(new_end - cs_end), PREC)
            if SPLIT_STATE:
                # the bf16 dot rounded x dt exp(..) (B is bf16 already, exact): add the rounding remainder as a
                # second bf16 term, so the local state carries ~16 significant bits of that operand, not 8
                acc = tl.dot((xw - xw.to(tl.bfloat16).to(tl.float32)).to(tl.bfloat16), b_s, acc)
            cs_end = new_end
        st = states_ptr + ((pid_b * nchunks + c) * nheads + h) * (P * N)
        tl.store(st + offs_p[:, None] * N + offs_n[None, :], acc)

        if STORE_CB:
            # C.B^T of this chunk (exact products of bf16 operands, fp32 sums), causal BLOCK_K blocks only: all by
            # the head-0 program, or (CB_SPREAD) causal block number q by the program of head q % H
            cb = cb_ptr + (pid_b * nchunks + c) * (CH * CH)
            q = 0
            for i in range(0, CH, BLOCK_K):
                for j in range(0, i + BLOCK_K, BLOCK_K):
                    if (q % nheads == h) if CB_SPREAD else (h == 0):
                        _ssd_store_cb_block(xbc, stride_xl, cb, i, j, chunk_start, seqlen, first, nheads, P, N, CH,
                                            BLOCK_K)
                    q += 1
    else:
        # no real token: only dt and the cumsum (the decay through the chunk) are needed
        _dt_cumsum_chunk(dt_row, stride_dl, h, chunk_start, seqlen, first, dt_bias, A, aux, ROUND_DT, CH, BLOCK_K)


@triton.jit
def _ssd_state_pass_kernel(
    states_ptr,  # (b, chunks, H, P*N) fp32 local states
    ent_ptr,  # (b, chunks, H, P*N) state entering each chunk (fp32 or bf16)
    dtcs_ptr,  # (b, H, chunks * CH, 2) fp32: dt, in-chunk cumsum
    init_ptr,  # (b, H, P*N) fp32 initial state (HAS_INIT)
    final_ptr,  # (b, H, P*N) fp32 final state (HAS_FINAL)
    mask_ptr, stride_mb, stride_ml,
    rows_ptr,  # (b, 2) int64 [base, first] of the packed layout (PACKED), or unused
    seqlen, nheads, nchunks,
    PN: tl.constexpr, CH: tl.constexpr, BLOCK_S: tl.constexpr,
    HAS_INIT: tl.constexpr, HAS_FINAL: tl.constexpr, HAS_MASK: tl.constexpr, PACKED: tl.constexpr,
):
    pid_s = tl.program_id(0)
    h = tl.program_id(1)
    pid_b = tl.program_id(2).to(tl.int64)
    offs = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)
    if HAS_INIT:
        s = tl.load(init_ptr + (pid_b * nheads + h) * PN + offs).to(tl.float32)
    else:
        s = tl.zeros((BLOCK_S,), dtype=tl.float32)
    cs_row = dtcs_ptr + (pid_b * nheads + h) * nchunks * CH * 2 + 1  # cs of position i at cs_row + 2 * i
    row = pid_b * nchunks * nheads * PN + h * PN + offs  # chunk c's slot is row + c * nheads * PN
    first = _varlen_first(rows_ptr, pid_b, PACKED)
    # The local state of chunk c + 1 is loaded one iteration ahead (two loads in flight per program); chunks with
    # no real token (and c = nchunks) load 0, which adds exactly nothing, and get no entering state (the scan does
    # not read it there). (The loop does its own one-ahead load, so it stays a `while` that Triton leaves as written;
    # Nsight Compute, session 4: ~63 % of DRAM bandwidth.)
    has_next = _chunk_has_tokens(mask_ptr, stride_mb, stride_ml, pid_b, 0, seqlen, first, HAS_MASK, CH)
    nxt = tl.load(states_ptr + row, mask=(offs >= 0) & has_next, other=0.0)
    c = 0
    while c < nchunks:
        cur, has_cur = nxt, has_next
        has_next = _chunk_has_tokens(mask_ptr, stride_mb, stride_ml, pid_b, (c + 1) * CH, seqlen, first, HAS_MASK,
                                     CH)
        nxt = tl.load(states_ptr + row + (c + 1) * nheads * PN, mask=(offs >= 0) & has_next, other=0.0)
        tl.store(ent_ptr + row + c * nheads * PN, s.to(ent_ptr.dtype.element_ty), mask=(offs >= 0) & has_cur)
        s = s * tl.exp(tl.load(cs_row + 2 * (c * CH + CH - 1))) + cur
        c += 1
    if HAS_FINAL:
        tl.store(final_ptr + (pid_b * nheads + h) * PN + offs, s)


@triton.jit
def _ssd_chunk_prep_kernel(
    xbc_ptr, stride_xb, stride_xl,  # xBC (b, L, H*P + 2N), channel stride 1
    dt_ptr, stride_db, stride_dl,  # dt_raw (b, L, H), head stride 1
    dt_bias_ptr, a_log_ptr,
    mask_ptr, stride_mb, stride_ml,
    dtcs_ptr,  # (b, H, chunks * CH, 2) fp32: dt, in-chunk cumsum of A*dt
    cb_ptr,  # (b, chunks, CH, CH) fp32
    rows_ptr,  # (b, 2) int64 [base, first] of the packed layout (PACKED), or unused
    seqlen, nheads, nchunks,
    P: tl.constexpr, N: tl.constexpr, CH: tl.constexpr, BLOCK_K: tl.constexpr,
    HAS_MASK: tl.constexpr, ROUND_DT: tl.constexpr, PACKED: tl.constexpr,
):
    """Launch 1 of the fused-state form, grid (H + causal C.B^T blocks, chunks, b): program q < H writes head q's
    dt and in-chunk cumsum of the chunk; program H + r computes causal C.B^T block number r of the chunk (row block
    i, column block j <= i, r = i (i + 1) / 2 + j), when the chunk holds a real token."""
    q = tl.program_id(0)
    c = tl.program_id(1)
    pid_b = tl.program_id(2).to(tl.int64)
    chunk_start = c * CH
    first = _varlen_first(rows_ptr, pid_b, PACKED)
    if q < nheads:
        A = -tl.exp(tl.load(a_log_ptr + q).to(tl.float32))
        dt_bias = tl.load(dt_bias_ptr + q).to(tl.float32)
        aux = dtcs_ptr + (((pid_b * nheads + q) * nchunks + c) * CH) * 2
        dt_row = dt_ptr + _varlen_base(rows_ptr, pid_b, stride_db, stride_dl, PACKED)
        _dt_cumsum_chunk(dt_row, stride_dl, q, chunk_start, seqlen, first, dt_bias, A, aux, ROUND_DT, CH, BLOCK_K)
    elif _chunk_has_tokens(mask_ptr, stride_mb, stride_ml, pid_b, chunk_start, seqlen, first, HAS_MASK, CH):
        r = q - nheads
        i = 0
        while (i + 1) * (i + 2) // 2 <= r:
            i += 1
        xbc = xbc_ptr + _varlen_base(rows_ptr, pid_b, stride_xb, stride_xl, PACKED)
        _ssd_store_cb_block(xbc, stride_xl, cb_ptr + (pid_b * nchunks + c) * (CH * CH), i * BLOCK_K,
                            (r - i * (i + 1) // 2) * BLOCK_K, chunk_start, seqlen, first, nheads, P, N, CH, BLOCK_K)


@triton.jit
def _ssd_state_fused_kernel(
    xbc_ptr, stride_xb, stride_xl,  # xBC (b, L, H*P + 2N), channel stride 1
    dtcs_ptr,  # (b, H, chunks * CH, 2) fp32: dt, in-chunk cumsum (launch 1)
    ent_ptr,  # (b, chunks, H, P, N) state entering each chunk (fp32 or bf16)
    init_ptr,  # (b, H, P, N) initial state (HAS_INIT)
    final_ptr,  # (b, H, P, N) fp32 final state (HAS_FINAL)
    rows_ptr,  # (b, 2) int64 [base, first] of the packed layout (PACKED), or unused
    seqlen, nheads, nchunks,
    P: tl.constexpr, N: tl.constexpr, CH: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr,
    HAS_INIT: tl.constexpr, HAS_FINAL: tl.constexpr, PREC: tl.constexpr, SPLIT_STATE: tl.constexpr,
    PACKED: tl.constexpr, STAGES: tl.constexpr,
):
    """Launch 2 of the fused-state form, grid (N / BLOCK_N, H, b): the chunk states and their passing in one
    sequential pass over chunks, for state columns n of one head (no local states in memory). Per chunk: store the
    entering state S (bf16 for the scan), then S <- S exp(cs_end) + sum_s x_s^T (B_s dt_s exp(cs_end - cs_s)), every
    exponent <= 0; the weighted B as two bf16 terms (SPLIT_STATE), x the exact bf16 operand. Chunks of a packed row
    before its first real token only decay S (their terms are 0; the scan reads no entering state there); in the
    masked layout x = B = 0 at pads, so their terms add exact zeros."""
    pid_n = tl.program_id(0)
    h = tl.program_id(1)
    pid_b = tl.program_id(2).to(tl.int64)
    offs_p = tl.arange(0, P)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    first = _varlen_first(rows_ptr, pid_b, PACKED)
    xbc = xbc_ptr + _varlen_base(rows_ptr, pid_b, stride_xb, stride_xl, PACKED)
    st_offs = offs_p[:, None] * N + offs_n[None, :]
    if HAS_INIT:
        s = tl.load(init_ptr + (pid_b * nheads + h) * (P * N) + st_offs).to(tl.float32)
    else:
        s = tl.zeros((P, BLOCK_N), dtype=tl.float32)
    aux_h = dtcs_ptr + (pid_b * nheads + h) * nchunks * CH * 2
    c0 = first // CH  # (0 unless packed)
    for c in range(0, c0):
        s = s * tl.exp(tl.load(aux_h + 2 * (c * CH + CH - 1) + 1))
    for c in tl.range(c0, nchunks, num_stages=STAGES):
        aux = aux_h + c * CH * 2
        tl.store(ent_ptr + ((pid_b * nchunks + c) * nheads + h) * (P * N) + st_offs, s.to(ent_ptr.dtype.element_ty))
        cs_end = tl.load(aux + 2 * (CH - 1) + 1)
        acc = s * tl.exp(cs_end)
        for k in tl.static_range(0, CH, BLOCK_K):
            t = c * CH + k + offs_k
            valid = (t < seqlen) & (t >= first)
            w = tl.load(aux + 2 * (k + offs_k)) * tl.exp(cs_end - tl.load(aux + 2 * (k + offs_k) + 1))
            x_t = tl.load(xbc + t[None, :] * stride_xl + (h * P + offs_p)[:, None], mask=valid[None, :], other=0.0)
            b_s = tl.load(xbc + t[:, None] * stride_xl + (nheads * P + offs_n)[None, :], mask=valid[:, None],
                          other=0.0)
            bw = b_s.to(tl.float32) * w[:, None]
            acc = _ssd_dot(x_t, bw, acc, PREC)
            if SPLIT_STATE:  # the rounding remainder of the weighted B as a second bf16 term
                acc = tl.dot(x_t, (bw - bw.to(tl.bfloat16).to(tl.float32)).to(tl.bfloat16), acc)
        s = acc
    if HAS_FINAL:
        tl.store(final_ptr + (pid_b * nheads + h) * (P * N) + st_offs, s)


@triton.jit
def _ssd_cb_block(cb_ptr, xbc, stride_xl, pid_b, c, m, k, c_l, t_s, valid_s, nheads, nchunks,
                  P: tl.constexpr, N: tl.constexpr, CH: tl.constexpr, BLOCK_M: tl.constexpr, LOAD_CB: tl.constexpr):
    """C.B^T of chunk c, rows of block m against columns of block k, (BLOCK_M, BLOCK_M) fp32: loaded from launch
    1's store (LOAD_CB) or computed from c_l (the row block's C, bf16) and B at tokens t_s."""
    if LOAD_CB:
        offs_i = tl.arange(0, BLOCK_M)
        return tl.load(cb_ptr + (pid_b * nchunks + c) * (CH * CH) + (m * BLOCK_M + offs_i)[:, None] * CH
                       + (k * BLOCK_M + offs_i)[None, :])
    else:
        b_t = tl.load(xbc + t_s[None, :] * stride_xl + (nheads * P + tl.arange(0, N))[:, None],
                      mask=valid_s[None, :], other=0.0)
        return tl.dot(c_l, b_t, tl.zeros((BLOCK_M, BLOCK_M), dtype=tl.float32))


@triton.jit
def _ssd_chunk_scan_kernel(
    xbc_ptr, stride_xb, stride_xl,  # xBC (b, L, H*P + 2N), channel stride 1
    dtcs_ptr,  # (b, H, chunks * CH, 2) fp32: dt, in-chunk cumsum
    ent_ptr,  # (b, chunks, H, P, N) state entering each chunk
    cb_ptr,  # (b, chunks, CH, CH) fp32 (LOAD_CB)
    d_ptr,  # (H,)
    mask_ptr, stride_mb, stride_ml,
    y_ptr, stride_yb, stride_yl,  # y (b, L, H*P), channel stride 1
    rows_ptr,  # (b, 2) int64 [base, first] of the packed layout (PACKED), or unused
    seqlen, nheads, nchunks,
    P: tl.constexpr, N: tl.constexpr, CH: tl.constexpr, BLOCK_M: tl.constexpr,
    HAS_MASK: tl.constexpr, LOAD_CB: tl.constexpr, PREC: tl.constexpr, HEADS: tl.constexpr, PACKED: tl.constexpr,
):
    NUM_M: tl.constexpr = CH // BLOCK_M
    pid_g = tl.program_id(0)  # head groups fastest: the programs of one row block share C and C.B^T in L2
    pid = tl.program_id(1)
    c = pid // NUM_M
    m = NUM_M - 1 - pid % NUM_M  # the longest (most causal blocks) row blocks start first
    pid_b = tl.program_id(2).to(tl.int64)
    chunk_start = c * CH
    offs_i = tl.arange(0, BLOCK_M)
    offs_p = tl.arange(0, P)
    offs_n = tl.arange(0, N)
    t_l = chunk_start + m * BLOCK_M + offs_i
    first = _varlen_first(rows_ptr, pid_b, PACKED)
    xbc_row = _varlen_base(rows_ptr, pid_b, stride_xb, stride_xl, PACKED)
    y_row = _varlen_base(rows_ptr, pid_b, stride_yb, stride_yl, PACKED)
    valid_l = (t_l < seqlen) & (t_l >= first)  # packed: pad rows are neither read nor written
    has_tokens = _chunk_has_tokens(mask_ptr, stride_mb, stride_ml, pid_b, chunk_start, seqlen, first, HAS_MASK, CH)
    xbc = xbc_ptr + xbc_row
    # HEADS heads per program, one after the other: their C and C.B^T loads repeat and hit L1
    for hh in range(HEADS):
        h = pid_g * HEADS + hh
        y_ptrs = y_ptr + y_row + t_l[:, None] * stride_yl + (h * P + offs_p)[None, :]
        if has_tokens:
            aux = dtcs_ptr + ((pid_b * nheads + h) * nchunks + c) * CH * 2
            c_l = tl.load(xbc + t_l[:, None] * stride_xl + (nheads * P + N + offs_n)[None, :],
                          mask=valid_l[:, None], other=0.0)
            # The decay exp(cs_l - cs_s) of an off-diagonal block (s before the row block) factors through cs_e,
            # the cumsum just before the row block (0 at the chunk's start): exp(cs_l - cs_e) exp(cs_e - cs_s), both
            # exponents <= 0 (cs falls with t), so neither factor overflows and a factor that underflows bounds a
            # product that is smaller still. The column factor goes on the C.B^T tile (a vector exp per block, not
            # a tile of them), the row factor on the accumulator once, after the state term and every
            # off-diagonal block; the diagonal block keeps the causal tile of exponents.
            cs_e = tl.load(aux + 2 * (m * BLOCK_M - 1) + 1, mask=m > 0, other=0.0)
            # contribution of the state entering the chunk: exp(cs_l) * C_l . state^T = exp(cs_l - cs_e) exp(cs_e) ..
            ent = ent_ptr + ((pid_b * nchunks + c) * nheads + h) * (P * N)
            st_t = tl.load(ent + offs_p[None, :] * N + offs_n[:, None])
            acc = _ssd_dot(c_l, st_t, tl.zeros((BLOCK_M, P), dtype=tl.float32), PREC) * tl.exp(cs_e)
            # in-chunk contribution: sum over s <= l of CB[l, s] exp(cs_l - cs_s) dt_s x_s
            # a while loop, which Triton leaves unpipelined: as a for loop (software-pipelined, 3 stages) the kernels
            # took 22 % longer (H200, bench/results/session4/run4/granite_ssd_ab.json). With one row block per
            # chunk there is no off-diagonal block, and the loop is left out: with m the constant 0 in it, Triton
            # 3.6's coalesce pass fails an assertion (the CUDA layer tests at chunk_size 16, session 11)
            if NUM_M > 1:
                k = 0
                while k < m:
                    t_s = chunk_start + k * BLOCK_M + offs_i
                    valid_s = (t_s < seqlen) & (t_s >= first)
                    cs_s = tl.load(aux + 2 * (k * BLOCK_M + offs_i) + 1)
                    w_s = tl.exp(cs_e - cs_s) * tl.load(aux + 2 * (k * BLOCK_M + offs_i))  # column factor x dt_s
                    cb = _ssd_cb_block(cb_ptr, xbc, stride_xl, pid_b, c, m, k, c_l, t_s, valid_s, nheads, nchunks,
                                       P, N, CH, BLOCK_M, LOAD_CB)
                    x_s = tl.load(xbc + t_s[:, None] * stride_xl + (h * P + offs_p)[None, :],
                                  mask=valid_s[:, None], other=0.0)
                    acc = _ssd_dot(cb * w_s[None, :], x_s, acc, PREC)
                    k += 1
            cs_l = tl.load(aux + 2 * (m * BLOCK_M + offs_i) + 1)
            acc = acc * tl.exp(cs_l - cs_e)[:, None]
            # the diagonal block (s and l in the row block): the causal tile of decays
            dt_l = tl.load(aux + 2 * (m * BLOCK_M + offs_i))
            cb = _ssd_cb_block(cb_ptr, xbc, stride_xl, pid_b, c, m, m, c_l, t_l, valid_l, nheads, nchunks,
                               P, N, CH, BLOCK_M, LOAD_CB)
            causal = offs_i[:, None] >= offs_i[None, :]
            decay = tl.exp(tl.where(causal, cs_l[:, None] - cs_l[None, :], float("-inf")))
            x_l = tl.load(xbc + t_l[:, None] * stride_xl + (h * P + offs_p)[None, :], mask=valid_l[:, None],
                          other=0.0)
            acc = _ssd_dot(cb * decay * dt_l[None, :], x_l, acc, PREC)
            acc += tl.load(d_ptr + h).to(tl.float32) * x_l.to(tl.float32)
            tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=valid_l[:, None])
        else:
            tl.store(y_ptrs, tl.zeros((BLOCK_M, P), dtype=y_ptr.dtype.element_ty), mask=valid_l[:, None])


def ssd_chunked_prefill(
    xBC: torch.Tensor,
    dt_raw: torch.Tensor,
    dt_bias: torch.Tensor,
    A_log: torch.Tensor,
    D: torch.Tensor,
    chunk_size: int = 256,
    initial_state: torch.Tensor | None = None,
    ssm_state_out: torch.Tensor | None = None,
    *,
    d_state: int | None = None,
    attention_mask: torch.Tensor | None = None,
    y_dtype: torch.dtype = torch.bfloat16,
    state_dtype: torch.dtype | None = None,
    precision: int = PREC_BF16,
    shared_cb: bool = True,
    cb_spread: bool = False,
    state_split: bool = True,
    block_m: int = 64,
    block_s: int = 512,
    scan_heads: int = 1,
    fused_state: bool | None = None,
    block_n: int = 64,
    fused_stages: int = 2,
    launch: dict[str, dict] | None = None,
    packed_rows: torch.Tensor | None = None,
    seqlen: int | None = None,
) -> torch.Tensor:
    """Chunked SSD scan of the Granite mixer, G = 1 (spec §2.1 step 9), with D skip.

    Args:
        xBC: (b, L, H*P + 2N) bf16, conv output after mask #2 (x | B | C), channel stride 1, any row strides.
        dt_raw: (b, L, H) bf16 (or fp32), before bias and softplus; head stride 1, any row strides (e.g. the dt
            slice of the in_proj output). dt = softplus(dt_raw + dt_bias); when dt_raw is bf16, the add and the
            softplus are rounded to bf16 as 5.17 does (spec "Decisions"), computed in fp32 then upcast.
        dt_bias, A_log, D: (H,), any float dtype; A = -exp(A_log.float()).
        chunk_size: power of two; the chunk grid starts at t = 0 of each row, as in the reference.
        initial_state: (b, H, P, N) state before t = 0 (continuation), any float dtype; None = zeros.
        ssm_state_out: (b, H, P, N) fp32, written with the state after the last position; None = not written.
        d_state: N; needed only when neither initial_state nor ssm_state_out gives it.
        attention_mask: (b, L), nonzero for real tokens, or None. Used only to skip chunks with no real token
            (their x = B = C are 0 after mask #2, so their outputs are 0 and their local state is 0); padding
            itself must already be applied to xBC.
        y_dtype: dtype of the returned y. bf16 by default (as the mamba_ssm kernel path, spec §4 item 3): measured
            on an H200, the normed out_proj input is still closer to a float32 run than the 5.17 reference is
            (bench/granite/NOTES.md); fp32 is available (as the reference's y).
        state_dtype: dtype of the chunk-entering states handed from launch 2 to launch 3; None = bf16 with
            PREC_BF16 (the C.state dot rounds that operand to bf16 anyway), fp32 otherwise.
        precision: operand precision of the tl.dot calls with a non-bf16 operand (PREC_BF16, PREC_TF32,
            PREC_TF32X3, PREC_IEEE). C.B^T always uses the exact bf16 operands.
        shared_cb: compute C.B^T once per chunk (launch 1, head 0) and share it over heads (else per head).
        cb_spread: with shared_cb, spread the chunk's causal C.B^T blocks over the head programs of launch 1
            instead of head 0 alone (which is then the straggler: launch 1 takes 140 us with it and 102 us without
            C.B^T at L = 16384 on an H200). Off here; FastMambaLayer turns it on (Phase 2 H200 run: -0.01 to
            -0.03 ms per layer call, bench/granite/NOTES.md).
        state_split: with PREC_BF16, the local-state dot (x dt decay) B^T adds the bf16 rounding remainder of
            its fp32 operand as a second bf16 dot, so the final ssm_state is as accurate as with fp32 operands
            (measured on an H200 at L = 4096: without it the state's max-element error reached 2.1x the 5.17
            reference's, the judge's bound being 2x; bench/granite/NOTES.md "Session 2"). B is exact in bf16.
        block_m, block_s: token rows per scan program (and per chunk-state dot step); state elements per
            state-passing program.
        scan_heads: heads per scan program (a divisor of H), done one after the other (C, C.B^T reuse in L1).
        fused_state: launches 1-2 as ``_ssd_chunk_prep_kernel`` (dt, cumsum, C.B^T) and ``_ssd_state_fused_kernel``
            (chunk states and their passing in one sequential pass per block_n state columns of a head, no local
            states in memory; software-pipelined over chunks with fused_stages stages) instead of the chunk-state
            and state-passing kernels (C.B^T then always spread over programs of its own, cb_spread unused). None
            (default): fused when there are at least ``FUSED_STATE_MIN_CHAINS`` (row, head) pairs (batch x H) and
            no attention_mask (whose fully padded chunks the other form skips). H200, kernels alone
            (bench/results/session11/run6/granite_ssd_ab.json): the packed B=8 bench batch 384 -> 360 us for the
            three SSD launches, but B=1 378 -> 493-611 us at L = 16384 (96-384 programs, each a chain of 64 chunks
            at ~4 us a link). block_n: a power of two (>= 16 on the GPU, tl.dot tiles).
        launch: optional Triton launch options per kernel, keys "state", "pass", "scan", "prep", "fused" (e.g.
            num_warps); a key given replaces that kernel's defaults (``ssd_launch_options``).
        packed_rows: the packed varlen layout (``packed_layout_rows`` of conv1d.py), or None. Then xBC (T, H*P + 2N)
            and dt_raw (T, H) hold the real tokens of a left-padded batch of ``seqlen`` positions per row, row after
            row (the pads read as 0, as the reference has them after the masks); attention_mask must be None
            (implied) and y is packed the same way.
        seqlen: L, the padded length (only with packed_rows).

    Returns:
        y: (b, L, H*P) (packed: (T, H*P)) of y_dtype, contiguous: Y_diag + Y_off + D*x.
    """
    packed = packed_rows is not None
    if packed:
        if attention_mask is not None:
            raise ValueError("attention_mask must be None with packed_rows (the packed layout implies it)")
        if xBC.dim() != 2 or dt_raw.dim() != 2 or xBC.shape[0] != dt_raw.shape[0]:
            raise ValueError(f"xBC and dt_raw: expected packed (T, C) and (T, H) with packed_rows, got "
                             f"{tuple(xBC.shape)} and {tuple(dt_raw.shape)}")
        check_packed_rows(packed_rows, seqlen, xBC.device)
        xBC, dt_raw = xBC[None], dt_raw[None]  # (1, T, .): the row stride is not used, rows come from packed_rows
    if xBC.dim() != 3 or dt_raw.dim() != 3:
        raise ValueError(f"xBC and dt_raw must be 3-D, got {tuple(xBC.shape)} and {tuple(dt_raw.shape)}")
    if xBC.dtype != torch.bfloat16:
        raise TypeError(f"xBC: expected torch.bfloat16, got {xBC.dtype}")
    if dt_raw.dtype not in (torch.bfloat16, torch.float32):
        raise TypeError(f"dt_raw: expected bf16 or fp32, got {dt_raw.dtype}")
    if xBC.stride(-1) != 1 or dt_raw.stride(-1) != 1:
        raise ValueError(f"xBC and dt_raw need a contiguous last dim, got strides {xBC.stride()}, {dt_raw.stride()}")
    conv_dim, nheads = xBC.shape[2], dt_raw.shape[2]
    if packed:
        batch = packed_rows.shape[0]
    else:
        batch, seqlen = xBC.shape[:2]
        if dt_raw.shape[:2] != (batch, seqlen):
            raise ValueError(f"dt_raw: expected shape {(batch, seqlen, nheads)}, got {tuple(dt_raw.shape)}")
    if seqlen < 1:
        raise ValueError("xBC: expected at least one time step, got L = 0")
    device = xBC.device
    for name, t in (("dt_bias", dt_bias), ("A_log", A_log), ("D", D)):
        check_shape_device(name, t, (nheads,), device)
    for t in (initial_state, ssm_state_out):
        if t is not None and d_state is None:
            d_state = t.shape[-1]
    if d_state is None:
        raise ValueError("d_state is required when neither initial_state nor ssm_state_out is given")
    head_dim, rem = divmod(conv_dim - 2 * d_state, nheads)
    if rem or head_dim <= 0:
        raise ValueError(f"xBC: last dim {conv_dim} is not H*P + 2N with H = {nheads}, N = {d_state}")
    state_shape = (batch, nheads, head_dim, d_state)
    if initial_state is not None:
        check_shape_device("initial_state", initial_state, state_shape, device)
        initial_state = initial_state.contiguous()
    if ssm_state_out is not None:
        check_shape_device("ssm_state_out", ssm_state_out, state_shape, device)
        if ssm_state_out.dtype != torch.float32 or not ssm_state_out.is_contiguous():
            raise TypeError(f"ssm_state_out: expected a contiguous fp32 tensor, got {ssm_state_out.dtype} with "
                            f"strides {ssm_state_out.stride()}")
    if chunk_size & (chunk_size - 1) or chunk_size < 2:
        raise ValueError(f"chunk_size must be a power of two >= 2, got {chunk_size}")
    if attention_mask is not None:
        check_shape_device("attention_mask", attention_mask, (batch, seqlen), device)
        if attention_mask.dtype == torch.bool:
            attention_mask = attention_mask.view(torch.uint8)

    if nheads % scan_heads:
        raise ValueError(f"scan_heads must divide H = {nheads}, got {scan_heads}")
    if block_n < 1 or block_n & (block_n - 1):
        raise ValueError(f"block_n must be a power of two, got {block_n}")
    if state_dtype is None:
        state_dtype = torch.bfloat16 if precision == PREC_BF16 else torch.float32
    ch = chunk_size
    bm = min(block_m, ch)
    bs = min(block_s, head_dim * d_state)
    nchunks = triton.cdiv(seqlen, ch)
    if fused_state is None:
        fused_state = attention_mask is None and batch * nheads >= FUSED_STATE_MIN_CHAINS
    # one fp32 workspace: dt and cumsum (interleaved), local states (not with fused_state), C.B^T
    n_dtcs = batch * nheads * nchunks * ch * 2
    n_states = batch * nchunks * nheads * head_dim * d_state
    n_local = 0 if fused_state else n_states
    work = torch.empty(n_dtcs + n_local + (batch * nchunks * ch * ch if shared_cb else 0), device=device,
                       dtype=torch.float32)
    dtcs, states = work[:n_dtcs], work[n_dtcs:n_dtcs + n_local]
    cb = work[n_dtcs + n_local:] if shared_cb else work
    entering = torch.empty(n_states, device=device, dtype=state_dtype)
    y = torch.empty((*(xBC.shape[:2] if packed else (batch, seqlen)), nheads * head_dim), device=device,
                    dtype=y_dtype)  # (1, T, H*P) packed
    mask = attention_mask if attention_mask is not None else work
    m_strides = (mask.stride(0), mask.stride(1)) if attention_mask is not None else (0, 0)
    has_mask = attention_mask is not None
    rows = packed_rows if packed else work
    opts = ssd_launch_options(device, has_mask, launch)
    split = state_split and precision == PREC_BF16
    init = initial_state if initial_state is not None else work
    final = ssm_state_out if ssm_state_out is not None else work

    if fused_state:
        nb = ch // bm
        _ssd_chunk_prep_kernel[(nheads + (nb * (nb + 1) // 2 if shared_cb else 0), nchunks, batch)](
            xBC, xBC.stride(0), xBC.stride(1), dt_raw, dt_raw.stride(0), dt_raw.stride(1),
            dt_bias, A_log, mask, *m_strides, dtcs, cb, rows, seqlen, nheads, nchunks,
            P=head_dim, N=d_state, CH=ch, BLOCK_K=bm, HAS_MASK=has_mask, ROUND_DT=dt_raw.dtype == torch.bfloat16,
            PACKED=packed, **opts["prep"],
        )
        bn = min(block_n, d_state)
        _ssd_state_fused_kernel[(triton.cdiv(d_state, bn), nheads, batch)](
            xBC, xBC.stride(0), xBC.stride(1), dtcs, entering, init, final, rows, seqlen, nheads, nchunks,
            P=head_dim, N=d_state, CH=ch, BLOCK_K=bm, BLOCK_N=bn, HAS_INIT=initial_state is not None,
            HAS_FINAL=ssm_state_out is not None, PREC=precision, SPLIT_STATE=split, PACKED=packed,
            STAGES=fused_stages, **opts["fused"],
        )
    else:
        _ssd_chunk_state_kernel[(nheads, nchunks, batch)](
            xBC, xBC.stride(0), xBC.stride(1), dt_raw, dt_raw.stride(0), dt_raw.stride(1),
            dt_bias, A_log, mask, *m_strides, dtcs, states, cb, rows,
            seqlen, nheads, nchunks,
            P=head_dim, N=d_state, CH=ch, BLOCK_K=bm,
            HAS_MASK=has_mask, ROUND_DT=dt_raw.dtype == torch.bfloat16, STORE_CB=shared_cb, CB_SPREAD=cb_spread,
            PREC=precision, SPLIT_STATE=split, PACKED=packed,
            **opts["state"],
        )
        _ssd_state_pass_kernel[(triton.cdiv(head_dim * d_state, bs), nheads, batch)](
            states, entering, dtcs, init, final, mask, *m_strides, rows, seqlen, nheads, nchunks,
            PN=head_dim * d_state, CH=ch, BLOCK_S=bs,
            HAS_INIT=initial_state is not None, HAS_FINAL=ssm_state_out is not None, HAS_MASK=has_mask,
            PACKED=packed, **opts["pass"],
        )
    _ssd_chunk_scan_kernel[(nheads // scan_heads, nchunks * (ch // bm), batch)](
        xBC, xBC.stride(0), xBC.stride(1), dtcs, entering, cb, D,
        mask, *m_strides, y, y.stride(0), y.stride(1), rows,
        seqlen, nheads, nchunks,
        P=head_dim, N=d_state, CH=ch, BLOCK_M=bm,
        HAS_MASK=has_mask, LOAD_CB=shared_cb, PREC=precision, HEADS=scan_heads, PACKED=packed,
        **opts["scan"],
    )
    return y[0] if packed else y
