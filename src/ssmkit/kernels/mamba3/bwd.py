# Mamba-3 SISO backward (spec §7.1 full VJP, computed chunk-wise as in §7.2), six or seven launches:
# 1. `_m3b_gate_kernel`, elementwise over (T, H, P): dY = dout * silu(z) (stored split into bf16 hi and lo,
#    the dots' operands in launches 2 and 3), and dz when the forward saved y (the autograd form; the full-VJP call's
#    forward writes dz itself, `mamba3_siso_fwd(gate_grad=...)`).
# 2. the state-gradient chain dS <- e^Lambda dS + dY^T diag(e^l) Q~ (a split-bf16 dot) over each sequence's
#    64-token chunks in reverse, from dfinal_ssm; stores the gradient of the state leaving every chunk (fp32, the
#    forward's chunk-state layout). Two forms (Mamba3BwdConfig.dstate_scan):
#    chain: `_m3b_dstate_kernel`, grid (H, S, 2 column halves), one dot per chunk on the serial path;
#    scan: `_m3b_dstate_local_kernel`, grid (chunk slots, H), the per-chunk term (one 64x64x128 dot) in parallel,
#    then `_m3b_dstate_scan_kernel`, grid (64*128 / BLOCK, H, S), an elementwise reverse scan in place.
# 3. the chunk body, everything that stays inside one chunk of one head (fp32 operands, M o G stored split into
#    bf16: tf32 dots, and split-bf16 dots where wgmma would need an operand transposed, `_m3_dot`; the 128 state
#    dims as two 64-wide halves), two launches:
#    `_m3b_intra_kernel`, grid (chunk slots, H): the (C, C) matrices, M o G (stored), the intra-chunk part of dl, dv;
#    and the chunk's per-token scalars (e^l, e^{L-l}, gamma, s; stored for the side kernels);
#    `_m3b_sides_kernel`, grid (4 x chunk slots, H): the q side (`_m3b_qside`) and the k side (`_m3b_kside`) of
#    each state half, one launch: dQ~ and dK~ of one state half, rotated back (per-head dq_hat / dk_hat rows, bf16
#    by default: Mamba3BwdConfig.head_partials),
#    dPhi, ds, and their parts of dl and dLambda; per-slot partial sums for q_bias, k_bias, D.
#    (One kernel did all of it until session 6: 255 registers with 2 KB of spills; split, 0.58 -> 0.42 ms at c1,
#    bench/mamba3/NOTES.md "Session 6".)
# 4. `_m3b_dphi_carry_kernel`, grid (S, H): the dPhi carry entering each chunk from the sequence's end
#    (dfinal_angle + the later chunks' dPhi sums), one backward pass over each sequence's chunks.
# 5. `_m3b_finish_kernel`, grid (ceil(T/16) + H + chunk slots x H,), two roles in one launch, the reduce programs
#    first (the longest). `_m3b_angle`, per (chunk slot, head): the chunk body's per-token parts combined in a fixed
#    order (dadt, ds, dgamma, dPhi), then the terms that cross chunk edges, per chunk: reverse cumsum of dPhi (+ the
#    carry) -> dangles and the angle part of ddt; the shifted-gamma term (ds of the token before) -> ddt, dtrap.
#    `_m3b_reduce`: GQA sum of dq_hat/dk_hat over the 32 heads per 16 tokens; bias/D sums per head.
# Q~ and K~ (biased, rotated) come from the forward (Mamba3FwdSaved.q_rot / k_rot: the rotated dims 0..63; dims
# 64..127, biased only, formed from q, k and the biases by ``_fwd_tilde_half``) instead of being rebuilt from q, k,
# the biases and cos / sin in each kernel; cos / sin are still read to rotate dQ~, dK~ back.
# No atomics: every sum has a fixed order, so repeated calls are bit-identical.
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from ssmkit.kernels.common.mapped_io import posted_pointer
from ssmkit.kernels.common.pdl import pdl_applies, pdl_launch_dependents, pdl_launch_option, pdl_wait
from ssmkit.kernels.mamba3.dots import _m3_dot, _m3_split_bf16
from ssmkit.kernels.mamba3.fwd import (
    Posted,
    _fwd_gate_grad,
    _fwd_locate_chunk,
    _fwd_tilde_half,
    contiguous_each,
    maxnreg_option,
    posted_kwargs,
)
from ssmkit.mamba3.shapes import CHUNK

_REDUCE_SLOTS = 64
#: Mamba3BwdConfig.head_partials -> the dtype of the per-head dq / dk rows
_HEAD_PARTIAL_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
_ANGLE_SLOTS = 16  # chunks per tile of the dPhi carry kernel
_GATE_BLOCK = 1024


@triton.jit
def _m3b_tanh(x):
    """tanh in fp32 through exp of a non-positive argument (no overflow)."""
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -t, t)


@triton.jit
def _m3b_mg_tile(mg_ptr, slot, h, H: tl.constexpr, C: tl.constexpr, TRANSPOSED: tl.constexpr):
    """Pointers (C, C) to the hi plane of chunk slot ``slot``, head h in the stored M o G, (nslot, H, 2, C, C) bf16
    (hi, then lo at + C * C: `_m3_split_bf16`); TRANSPOSED: to (M o G)^T."""
    i = tl.arange(0, C)
    base = mg_ptr + (slot * H + h) * 2 * C * C
    if TRANSPOSED:
        tile = base + i[None, :] * C + i[:, None]
    else:
        tile = base + i[:, None] * C + i[None, :]
    return tile


@triton.jit
def _m3b_unrotate(g, cos_ptr, sin_ptr, tok, vmask, h, H: tl.constexpr, C: tl.constexpr, NA: tl.constexpr):
    """R(Phi)^T g on the rotated half, (C, 2 NA), with cos / sin of Phi read from the forward's saved (T, H, NA)
    tiles (identity on invalid rows). The rotation (spec F4) takes the pair (x_2j, x_2j+1) to (x_2j c - x_2j+1 s,
    x_2j+1 c + x_2j s), so dx_2j = g_2j c + g_2j+1 s and dx_2j+1 = g_2j+1 c - g_2j s. (Until session 15 cos / sin
    were read once per dim, each value twice, with a sign tile: ~450 of the side kernel's SASS instructions.)"""
    off = tok[:, None] * (H * NA) + h * NA + tl.arange(0, NA)[None, :]
    cs = tl.load(cos_ptr + off, mask=vmask, other=1.0)
    sn = tl.load(sin_ptr + off, mask=vmask, other=0.0)
    g0, g1 = tl.split(tl.reshape(g, (C, NA, 2)))
    return tl.reshape(tl.join(g0 * cs + g1 * sn, g1 * cs - g0 * sn), (C, 2 * NA))


@triton.jit
def _m3b_dphi(g, xr, C: tl.constexpr, NA: tl.constexpr):
    """dPhi (C, NA) from the gradient g of a rotated vector xr (spec §7.1): g_odd xr_even - g_even xr_odd."""
    g0, g1 = tl.split(tl.reshape(g, (C, NA, 2)))
    x0, x1 = tl.split(tl.reshape(xr, (C, NA, 2)))
    return g1 * x0 - g0 * x1


@triton.jit
def _m3b_gate_kernel(dout_ptr, z_ptr, y_ptr, dz_ptr, dy_ptr, io_ptr, NUMEL, P: tl.constexpr, BLOCK: tl.constexpr,
                     DZ: tl.constexpr, DY: tl.constexpr, DOUT_WORD: tl.constexpr, Z_WORD: tl.constexpr,
                     DZ_WORD: tl.constexpr):
    """Grid (cdiv(T * H * P, BLOCK),): the gate (F8), elementwise over (T, H, P): with DZ, dz = dout * y * silu'(z)
    (the input's dtype); with DY, dY = dout * silu(z), computed in fp32 and stored split into bf16 hi and lo
    (`_m3_split_bf16`), (T, H, 2, P): the dots of the state-gradient and chunk-body kernels take the halves as
    they are instead of each splitting dY for itself (hi + lo is within 2^-16 of the fp32 value; the intra kernel
    folds dY's elementwise uses into its dots, `_m3b_intra_kernel`). dY needs no forward result, so a graph can
    compute it beside the forward (ssmkit.mamba3.graph). *_WORD: posted pointers (``posted_pointer``,
    kernels/common/mapped_io.py)."""
    dout_ptr = posted_pointer(dout_ptr, io_ptr, DOUT_WORD)
    z_ptr = posted_pointer(z_ptr, io_ptr, Z_WORD)
    dz_ptr = posted_pointer(dz_ptr, io_ptr, DZ_WORD)
    e = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = e < NUMEL
    dout = tl.load(dout_ptr + e, mask=m, other=0.0).to(tl.float32)
    zz = tl.load(z_ptr + e, mask=m, other=0.0).to(tl.float32)
    sig = tl.sigmoid(zz)
    if DZ:
        yy = tl.load(y_ptr + e, mask=m, other=0.0)
        dz = _fwd_gate_grad(dout, yy, sig, yy * zz * sig)
        tl.store(dz_ptr + e, dz.to(dz_ptr.dtype.element_ty), mask=m)
    if DY:
        hi, lo = _m3_split_bf16(dout * zz * sig)
        row = dy_ptr + (e // P) * (2 * P) + e % P
        tl.store(row, hi, mask=m)
        tl.store(row + P, lo, mask=m)


@triton.jit
def _m3b_dstate_chunk_loads(qr_ptr, q_ptr, qb_ptr, adt_ptr, dy_ptr, bos, eos, c, h, half, H: tl.constexpr,
                            P: tl.constexpr, N: tl.constexpr, C: tl.constexpr):
    """The chain's inputs for local chunk c of the sequence [bos, eos) (zeros for c < 0): adt (C,), dY (C, P) as its
    bf16 halves hi, lo (`_m3b_dy_tiles`) and this program's state half of q~ (C, N/2)."""
    tok = bos + c * C + tl.arange(0, C)
    valid = (tok < eos) & (c >= 0)
    adt = tl.load(adt_ptr + tok * H + h, mask=valid, other=0.0)
    dy_hi, dy_lo = _m3b_dy_tiles(dy_ptr, tok, valid, h, H, P)
    return adt, dy_hi, dy_lo, _fwd_tilde_half(qr_ptr, q_ptr, qb_ptr, tok, h, valid, half, H, N)


@triton.jit
def _m3b_dy_tiles(dy_ptr, tok, valid, h, H: tl.constexpr, P: tl.constexpr):
    """dY of head h at tokens tok (C,) as the gate kernel stored it, (T, H, 2, P) bf16: the (C, P) hi and lo halves
    (zero on invalid rows)."""
    row = dy_ptr + tok[:, None] * (H * 2 * P) + h * (2 * P) + tl.arange(0, P)[None, :]
    return (tl.load(row, mask=valid[:, None], other=0.0), tl.load(row + P, mask=valid[:, None], other=0.0))


@triton.jit
def _m3b_dstate_kernel(
    qr_ptr, q_ptr, qb_ptr, adt_ptr, dy_ptr, cu_ptr, dfs_ptr, dstates_ptr, io_ptr,
    H: tl.constexpr, P: tl.constexpr, N: tl.constexpr, C: tl.constexpr, TPREC: tl.constexpr,
    DFINAL_SSM_WORD: tl.constexpr,
):
    """Grid (H, S, 2): the reverse state-gradient chain of §7.2 on one half of the state columns, from the gate
    kernel's dY; stores the gradient of the state leaving each chunk (dS_acc of that chunk). One branch per half,
    each built for its half (`_m3b_dstate_chain`)."""
    for half in tl.static_range(2):
        if tl.program_id(2) == half:
            _m3b_dstate_chain(tl.program_id(0), tl.program_id(1), half, qr_ptr, q_ptr, qb_ptr, adt_ptr, dy_ptr,
                              cu_ptr, dfs_ptr, dstates_ptr, io_ptr, H, P, N, C, TPREC, DFINAL_SSM_WORD)


@triton.jit
def _m3b_dstate_chain(h, s, half: tl.constexpr, qr_ptr, q_ptr, qb_ptr, adt_ptr, dy_ptr, cu_ptr, dfs_ptr,
                      dstates_ptr, io_ptr, H: tl.constexpr, P: tl.constexpr, N: tl.constexpr, C: tl.constexpr,
                      TPREC: tl.constexpr, DFINAL_SSM_WORD: tl.constexpr):
    """`_m3b_dstate_kernel`'s chain for head h, sequence s and state half ``half``."""
    NH: tl.constexpr = N // 2
    bos = tl.load(cu_ptr + s)
    eos = tl.load(cu_ptr + s + 1)
    nchunks = tl.cdiv(eos - bos, C)
    base = bos // C + s
    cols = half * NH + tl.arange(0, NH)
    tile = tl.arange(0, P)[:, None] * N + cols[None, :]
    ds = tl.load(posted_pointer(dfs_ptr, io_ptr, DFINAL_SSM_WORD) + (s * H + h) * P * N + tile)
    adt, dy_hi, dy_lo, qt = _m3b_dstate_chunk_loads(qr_ptr, q_ptr, qb_ptr, adt_ptr, dy_ptr, bos, eos, nchunks - 1,
                                                    h, half, H, P, N, C)
    for ci in range(0, nchunks):
        c = nchunks - 1 - ci
        tl.store(dstates_ptr + ((base + c) * H + h) * P * N + tile, ds)
        # the chunk before's loads issued here, so that their latency hides behind this chunk's dot (a hand-made
        # one-stage pipeline: Triton's own, num_stages 2-3, measured slower, Mamba3BwdConfig.dstate_stages)
        adt_n, dy_hi_n, dy_lo_n, qt_n = _m3b_dstate_chunk_loads(qr_ptr, q_ptr, qb_ptr, adt_ptr, dy_ptr, bos, eos,
                                                                c - 1, h, half, H, P, N, C)
        ell = tl.cumsum(adt, axis=0)
        lam = tl.sum(adt, axis=0)
        # dY^T (diag(e^l) Q~): dY's halves as the gate kernel split them, e^l on the other operand
        ds = tl.exp(lam) * ds + _m3_dot(tl.trans(dy_hi), qt * tl.exp(ell)[:, None], TPREC, a_lo=tl.trans(dy_lo))
        adt, dy_hi, dy_lo, qt = adt_n, dy_hi_n, dy_lo_n, qt_n


@triton.jit
def _m3b_dstate_local_kernel(
    qr_ptr, q_ptr, qb_ptr, adt_ptr, dy_ptr, cu_ptr, dloc_ptr, S,
    H: tl.constexpr, P: tl.constexpr, N: tl.constexpr, C: tl.constexpr, SB: tl.constexpr,
    TPREC: tl.constexpr,
):
    """Grid (chunk slots, H): chunk c's own term of the reverse chain, (diag(e^l) dY)^T Q~ (P, N) fp32, stored at the
    chunk's slot (the scan kernel turns it into the state gradient in place). The first chunk of a sequence feeds
    nothing (the initial state has no gradient), so it writes nothing; unused slots neither."""
    slot = tl.program_id(0)
    h = tl.program_id(1)
    NH: tl.constexpr = N // 2
    s, bos, eos, c = _fwd_locate_chunk(cu_ptr, slot, S, SB, C)
    tok = bos + c * C + tl.arange(0, C)
    valid = tok < eos
    pv = tl.arange(0, P)
    if (c > 0) & (bos + c * C < eos):
        dy_hi, dy_lo = _m3b_dy_tiles(dy_ptr, tok, valid, h, H, P)
        e_ell = tl.exp(tl.cumsum(tl.load(adt_ptr + tok * H + h, mask=valid, other=0.0), axis=0))
        row = dloc_ptr + (slot * H + h) * P * N + pv[:, None] * N
        for half in tl.static_range(2):
            qt = _fwd_tilde_half(qr_ptr, q_ptr, qb_ptr, tok, h, valid, half, H, N)
            tl.store(row + (half * NH + tl.arange(0, NH))[None, :],
                     _m3_dot(tl.trans(dy_hi), qt * e_ell[:, None], TPREC, a_lo=tl.trans(dy_lo)))


@triton.jit
def _m3b_dstate_scan_kernel(adt_ptr, cu_ptr, dfs_ptr, dstates_ptr, io_ptr,
                            H: tl.constexpr, PN: tl.constexpr, C: tl.constexpr, BLOCK: tl.constexpr,
                            DFINAL_SSM_WORD: tl.constexpr):
    """Grid (PN / BLOCK, H, S): in place, in reverse over the sequence's chunk slots. On entry slot c holds chunk c's
    local term L_c; on exit the gradient G_c of the state leaving chunk c: G_last = dfinal_ssm,
    G_{c-1} = e^{Lambda_c} G_c + L_c (Lambda_c = sum of the chunk's adt)."""
    b = tl.program_id(0)
    h = tl.program_id(1)
    s = tl.program_id(2)
    bos = tl.load(cu_ptr + s)
    eos = tl.load(cu_ptr + s + 1)
    nchunks = tl.cdiv(eos - bos, C)
    base = bos // C + s
    e = b * BLOCK + tl.arange(0, BLOCK)
    i = tl.arange(0, C)
    g = tl.load(posted_pointer(dfs_ptr, io_ptr, DFINAL_SSM_WORD) + (s * H + h) * PN + e)
    for ci in range(0, nchunks):
        c = nchunks - 1 - ci
        tok = bos + c * C + i
        lam = tl.sum(tl.load(adt_ptr + tok * H + h, mask=tok < eos, other=0.0), axis=0)
        ptr = dstates_ptr + ((base + c) * H + h) * PN + e
        loc = tl.load(ptr, mask=c > 0, other=0.0)  # the first chunk's term is never written (nor needed)
        tl.store(ptr, g)
        g = tl.exp(lam) * g + loc


@triton.jit
def _m3b_chunk_setup(cu_ptr, fscal_ptr, slot, h, S, H: tl.constexpr, C: tl.constexpr, SB: tl.constexpr):
    """Where a chunk slot's chunk lies and its per-token scalars (F5, F6) as the forward's chunk-state kernel stored
    them (``Mamba3FwdSaved.chunk_scalars``), for the intra kernel: (sequence, end, tok (C,), valid (C,), active (the
    slot holds a chunk), ell = in-chunk cumsum of adt, Lambda = its last element, gamma, scale s). A slot no chunk
    maps to has no valid token and zero scalars (its stored row was never written)."""
    s, bos, eos, c = _fwd_locate_chunk(cu_ptr, slot, S, SB, C)
    t0 = bos + c * C
    tok = t0 + tl.arange(0, C)
    active = t0 < eos
    row = fscal_ptr + (slot * H + h) * 3 * C + tl.arange(0, C)
    ell = tl.load(row, mask=active, other=0.0)
    lam = tl.load(fscal_ptr + (slot * H + h) * 3 * C + C - 1, mask=active, other=0.0)
    return (s, eos, tok, tok < eos, active, ell, lam, tl.load(row + C, mask=active, other=0.0),
            tl.load(row + 2 * C, mask=active, other=0.0))


@triton.jit
def _m3b_side_setup(cu_ptr, slot, S, C: tl.constexpr, SB: tl.constexpr):
    """Where a side kernel program's chunk lies: (sequence, end, tok (C,), valid (C,), active)."""
    s, bos, eos, c = _fwd_locate_chunk(cu_ptr, slot, S, SB, C)
    t0 = bos + c * C
    tok = t0 + tl.arange(0, C)
    return s, eos, tok, tok < eos, t0 < eos


@triton.jit
def _m3b_side_scalars(scal_ptr, slot, h, H: tl.constexpr, C: tl.constexpr):
    """The chunk's per-token scalars (C,) each as the intra kernel stored them for the side kernels (the same values
    as `_m3b_chunk_setup`'s, not recomputed: the cumsum, two sigmoids and the exps were 640 of the side kernel's
    5.5 k SASS instructions, session 15): (e^l, e^{L-l}, gamma, s)."""
    row = scal_ptr + (slot * H + h) * 4 * C + tl.arange(0, C)
    return tl.load(row), tl.load(row + C), tl.load(row + 2 * C), tl.load(row + 3 * C)


@triton.jit
def _m3b_intra_kernel(
    kr_ptr, k_ptr, kb_ptr, v_ptr, fscal_ptr, ms_ptr, qk_ptr, d_ptr, dy_ptr, cu_ptr,
    dstates_ptr, dfv_ptr,
    mg_ptr, dv_ptr, dl_ptr, etok_ptr, ddp_ptr, scal_ptr, elam_ptr, io_ptr,
    S, H: tl.constexpr, P: tl.constexpr, N: tl.constexpr, C: tl.constexpr, SB: tl.constexpr, PREC: tl.constexpr,
    TPREC: tl.constexpr, V_WORD: tl.constexpr, DV_WORD: tl.constexpr, PDL: tl.constexpr, PDL_NEXT: tl.constexpr,
):
    """Grid (chunk slots, H), chunk body part 1: what needs the (C, C) matrices of one chunk. The scores
    A = Q~ Ks^T (Ks = diag(s) K~) are used only as M o A = decay o A, which the forward's chunk scan stored
    (``Mamba3FwdSaved.masked_scores``), and q^.k^ (F7) as the rotate kernel stored it (``Mamba3FwdSaved.qk``):
    both are loaded, not formed again (bench/mamba3/NOTES.md "Session 27"). G = dY V^T, M o G (stored for the
    side kernels split into bf16 hi and lo, (2, C, C) per slot and head: their four programs per chunk and head
    read it split instead of each splitting it, sides 0.187 -> 0.171 ms at c1, NOTES.md "Session 19"), the
    intra-chunk part of dl (row minus column sums of (M o A) o G), and all of dv: (M o A)^T dY + (D + gamma q^.k^) dY
    + diag(e^{L-l}) Ks dS_out^T (+ dfinal_v on a sequence's last token).
    Per token it stores e = dY.v; per slot sum(e) (the D partial); per slot and head the chunk scalars
    the side kernels read instead of recomputing them (`_m3b_side_scalars`): rows e^l, e^{L-l}, gamma, s of
    ``scal`` (nslot, H, 4, C) and e^L in ``elam`` (nslot, H).
    PDL: launched by programmatic dependent launch (kernels/common/pdl.py) after its stream predecessor: in a graph
    with its side streams forked the forward's chunk scan, whose tail its programs overlap with everything up to
    M o G's store (setup, dY, V, G = dY V^T, e, the chunk scalars: nothing the scan writes, and no buffer the scan
    reads); in a direct or autograd call (or a graph on one stream) the state-gradient chain (or the copy-out of
    the forward's small results), which triggers nothing, so the kernel starts when it completes. The programs wait
    before loading M o A, the scan's result (and dS_out, the chain's). PDL_NEXT: the side kernel, launched with
    PDL after this one, may start once every program got past its wait (or, launched plainly, at once): its
    programs wait for this kernel before reading its results (`_m3b_sides_kernel`)."""
    pdl_launch_dependents(PDL_NEXT and not PDL)
    v_ptr = posted_pointer(v_ptr, io_ptr, V_WORD)
    dv_ptr = posted_pointer(dv_ptr, io_ptr, DV_WORD)
    slot = tl.program_id(0)
    h = tl.program_id(1)
    NH: tl.constexpr = N // 2
    s, eos, tok, valid, active, ell, lam, gam, sc = _m3b_chunk_setup(cu_ptr, fscal_ptr, slot, h, S, H, C, SB)
    vmask = valid[:, None]
    i = tl.arange(0, C)
    pv = tl.arange(0, P)
    # what is final early is stored early, so that nothing of it stays live through the dots (session 26: under a
    # 168 cap, offline, 355 -> 105 spill instructions with the two changes below; uncapped 22 -> 0)
    row = scal_ptr + (slot * H + h) * 4 * C + i
    tl.store(row, tl.exp(ell))
    tl.store(row + C, tl.exp(lam - ell))
    tl.store(row + 2 * C, gam)
    tl.store(row + 3 * C, sc)
    tl.store(elam_ptr + slot * H + h, tl.exp(lam))
    th_ = tok * H + h
    st_row = (slot * H + h) * P * N + pv[:, None] * N
    hp = tok[:, None] * (H * P) + h * P + pv[None, :]
    # dY (dout * silu(z), split by the gate kernel) only as the halves of dot operands: its elementwise uses are
    # folded into the dots (e = dY.v is G's diagonal, (D + gamma q^.k^) dY a diagonal of dv's matrix), so that its
    # halves are neither added back nor converted between layouts
    dy_hi, dy_lo = _m3b_dy_tiles(dy_ptr, tok, valid, h, H, P)
    diag = i[:, None] == i[None, :]
    g = _m3_dot(dy_hi, tl.trans(tl.load(v_ptr + hp, mask=vmask, other=0.0)), TPREC, a_lo=dy_lo)  # (v exact)
    e_tok = tl.sum(tl.where(diag, g, 0.0), axis=1)
    tl.store(etok_ptr + th_, e_tok, mask=valid)
    tl.store(ddp_ptr + slot * H + h, tl.sum(e_tok, axis=0))
    decay = tl.where(i[:, None] > i[None, :], tl.exp(tl.minimum(ell[:, None] - ell[None, :], 0.0)), 0.0)
    mg = decay * g
    mg_hi, mg_lo = _m3_split_bf16(mg)  # stored split for the side kernel's dots (`_m3_dot`)
    mg_tile = _m3b_mg_tile(mg_ptr, slot, h, H, C, False)
    tl.store(mg_tile, mg_hi)
    tl.store(mg_tile + C * C, mg_lo)
    pdl_wait(PDL)
    pdl_launch_dependents(PDL_NEXT and PDL)
    ma = tl.load(ms_ptr + ((slot * H + h) * C + i[:, None]) * C + i[None, :], mask=active, other=0.0)  # M o A
    mm = ma * g  # (M o A) o G
    tl.store(dl_ptr + th_, tl.sum(mm, axis=1) - tl.sum(mm, axis=0), mask=valid)
    qk = tl.load(qk_ptr + th_, mask=valid, other=0.0)
    w = tl.trans(ma) + tl.where(diag, (tl.load(d_ptr + h) + gam * qk)[:, None], 0.0)  # (M o A: 0 on i = j)
    dvv = _m3_dot(w, dy_hi, TPREC, b_lo=dy_lo)
    # diag(e^{L-l}) Ks dS_out^T last, onto dv's accumulator, K~ loaded again (L1 / L2) and the chunk's scalars too,
    # rather than the (C, P) product (until session 26 formed beside the scores since session 17) or the scalars
    # kept live through the kernel
    srow = fscal_ptr + (slot * H + h) * 3 * C + i
    kscale = tl.load(srow + 2 * C, mask=active, other=0.0) * tl.exp(lam - tl.load(srow, mask=active, other=0.0))
    for half in tl.static_range(2):
        kt = _fwd_tilde_half(kr_ptr, k_ptr, kb_ptr, tok, h, valid, half, H, N)
        ds_out = tl.load(dstates_ptr + st_row + (half * NH + tl.arange(0, NH))[None, :], mask=active, other=0.0)
        dvv = tl.dot(kt * kscale[:, None], tl.trans(ds_out), dvv, input_precision=PREC)
    dvv += tl.where((tok == eos - 1)[:, None], tl.load(dfv_ptr + (s * H + h) * P + pv).to(tl.float32)[None, :], 0.0)
    tl.store(dv_ptr + hp, dvv.to(dv_ptr.dtype.element_ty), mask=vmask)


@triton.jit
def _m3b_side_out(g, xr, tok, vmask, slot, h, half, cos_ptr, sin_ptr, dphi_ptr, dphis_ptr, dx_ptr, dxb_ptr,
                  H: tl.constexpr, N: tl.constexpr, NA: tl.constexpr, C: tl.constexpr):
    """Store one side kernel's gradient g of the rotated vector xr (C, N/2) on state half ``half``: on the rotated
    half (0) its dPhi (C, NA) and dPhi's column sum per slot first, then R(Phi)^T g; the (T, H, N) per-head
    partial and its column sum per slot (the bias partial). Half 1 is not rotated: g is stored as it is (``half`` a
    constexpr since session 17; until session 7 half 1 ran the rotation as the identity through masked cos / sin
    loads, a third of its instructions spent on nothing)."""
    if half == 0:
        m = tl.arange(0, NA)
        dphi = _m3b_dphi(g, xr, C, NA)
        tl.store(dphi_ptr + tok[:, None] * (H * NA) + h * NA + m[None, :], dphi, mask=vmask)
        tl.store(dphis_ptr + (slot * H + h) * NA + m, tl.sum(tl.where(vmask, dphi, 0.0), axis=0))
        dx = _m3b_unrotate(g, cos_ptr, sin_ptr, tok, vmask, h, H, C, NA)
    else:
        dx = g
    cols = half * (N // 2) + tl.arange(0, N // 2)
    tl.store(dx_ptr + tok[:, None] * (H * N) + h * N + cols[None, :], dx.to(dx_ptr.dtype.element_ty), mask=vmask)
    tl.store(dxb_ptr + (slot * H + h) * N + cols, tl.sum(dx, axis=0))


@triton.jit
def _m3b_qside(
    slot, h, half, qr_ptr, kr_ptr, q_ptr, k_ptr, qb_ptr, kb_ptr, scal_ptr, elam_ptr, dy_ptr, cu_ptr, cos_ptr,
    sin_ptr, states_ptr, dstates_ptr, mg_ptr, etok_ptr, dqp_ptr, dphi_ptr, dphis_ptr, dl_ptr, dlam_ptr, dqbp_ptr,
    S, T, NSLOT, H: tl.constexpr, P: tl.constexpr, N: tl.constexpr, NA: tl.constexpr, C: tl.constexpr,
    SB: tl.constexpr, PREC: tl.constexpr, PDL: tl.constexpr,
):
    """Chunk body part 2 (`_m3b_sides_kernel`), the q side of one state half of one chunk and head:
    dQ~ = (M o G) Ks + diag(e^l) dY S_in + gamma e K~ (the q^.k^ diagonal path written as gamma e k~: rotating it back
    gives gamma e k^, and its dPhi parts from q and k cancel, q~.k~ being rotation-free). Stores dQ~ rotated back
    (per-head dq partial), dPhi from the q side (half 0), this half's terms of dl (e^l dY S_in . q~) and of dLambda
    (e^Lambda S_in : dS_out). PDL: what reads no intra-kernel result comes before the wait (`_m3b_sides_kernel`)."""
    NH: tl.constexpr = N // 2
    s, eos, tok, valid, active = _m3b_side_setup(cu_ptr, slot, S, C, SB)
    vmask = valid[:, None]
    pv = tl.arange(0, P)
    th_ = tok * H + h
    st = (slot * H + h) * P * N + pv[:, None] * N + (half * NH + tl.arange(0, NH))[None, :]
    s_in = tl.load(states_ptr + st, mask=active, other=0.0)  # state entering the chunk
    ds_out = tl.load(dstates_ptr + st, mask=active, other=0.0)  # gradient of the state leaving it
    s_ds = tl.sum(tl.sum(s_in * ds_out, axis=1), axis=0)
    dy_hi, dy_lo = _m3b_dy_tiles(dy_ptr, tok, valid, h, H, P)
    x = _m3_dot(dy_hi, s_in, PREC, a_lo=dy_lo)
    qt = _fwd_tilde_half(qr_ptr, q_ptr, qb_ptr, tok, h, valid, half, H, N)
    kt = _fwd_tilde_half(kr_ptr, k_ptr, kb_ptr, tok, h, valid, half, H, N)
    pdl_wait(PDL)
    e_ell, _, gam, sc = _m3b_side_scalars(scal_ptr, slot, h, H, C)
    dlam = tl.load(elam_ptr + slot * H + h) * s_ds
    mg_tile = _m3b_mg_tile(mg_ptr, slot, h, H, C, False)
    ge = gam * tl.load(etok_ptr + th_, mask=valid, other=0.0)
    # (stored before the dot, so that x is dead after it: under the 168 cap, offline, the rotated half's branch
    # spills 8 instead of 50 instructions)
    tl.store(dl_ptr + (1 + half) * T * H + th_, e_ell * tl.sum(x * qt, axis=1), mask=valid)
    dqt = (_m3_dot(tl.load(mg_tile), kt * sc[:, None], PREC, e_ell[:, None] * x, a_lo=tl.load(mg_tile + C * C))
           + ge[:, None] * kt)
    tl.store(dlam_ptr + (half * NSLOT + slot) * H + h, dlam)
    _m3b_side_out(dqt, qt, tok, vmask, slot, h, half, cos_ptr, sin_ptr, dphi_ptr, dphis_ptr, dqp_ptr, dqbp_ptr,
                  H, N, NA, C)


@triton.jit
def _m3b_kside(
    slot, h, half, qr_ptr, kr_ptr, q_ptr, k_ptr, qb_ptr, kb_ptr, v_ptr, scal_ptr, cu_ptr, cos_ptr, sin_ptr,
    dstates_ptr, dfk_ptr, mg_ptr, etok_ptr, dkp_ptr, dphi_ptr, dphis_ptr, dl_ptr, dlam_ptr, ds_ptr, dkbp_ptr,
    S, T, NSLOT, H: tl.constexpr, P: tl.constexpr, N: tl.constexpr, NA: tl.constexpr, C: tl.constexpr,
    SB: tl.constexpr, PREC: tl.constexpr, PDL: tl.constexpr,
):
    """Chunk body part 3 (`_m3b_sides_kernel`), the k side of one state half of one chunk and head:
    dKs = (M o G)^T Q~ + diag(e^{L-l}) V dS_out, dk~ = s dKs + gamma e q~ (+ dfinal_k on a sequence's last token).
    Stores dk~ rotated back (per-head dk partial), dPhi from the k side (half 0), ds = dKs . k~ per token, this
    half's terms of dl (-e^{L-l} V dS_out . ks) and of dLambda (their sum). PDL: as the q side."""
    NH: tl.constexpr = N // 2
    s, eos, tok, valid, active = _m3b_side_setup(cu_ptr, slot, S, C, SB)
    vmask = valid[:, None]
    pv = tl.arange(0, P)
    th_ = tok * H + h
    cols = half * NH + tl.arange(0, NH)
    ds_out = tl.load(dstates_ptr + (slot * H + h) * P * N + pv[:, None] * N + cols[None, :], mask=active, other=0.0)
    vv = tl.load(v_ptr + tok[:, None] * (H * P) + h * P + pv[None, :], mask=vmask, other=0.0)
    vds = _m3_dot(vv, ds_out, PREC)  # v is bf16, exact: no split, no lo.hi dot
    qt = _fwd_tilde_half(qr_ptr, q_ptr, qb_ptr, tok, h, valid, half, H, N)
    kt = _fwd_tilde_half(kr_ptr, k_ptr, kb_ptr, tok, h, valid, half, H, N)
    pdl_wait(PDL)
    _, e_rev, gam, sc = _m3b_side_scalars(scal_ptr, slot, h, H, C)
    fwd_state = e_rev * tl.sum(vds * (kt * sc[:, None]), axis=1)
    # (stored before the dot, not after it: under the 168 cap, offline, session 26, the other half's branch spills
    # none instead of 31 instructions (2000 -> 1880 SASS), the rotated half's 73 instead of 76)
    tl.store(dl_ptr + (3 + half) * T * H + th_, -fwd_state, mask=valid)
    tl.store(dlam_ptr + ((2 + half) * NSLOT + slot) * H + h, tl.sum(fwd_state, axis=0))
    mgt_tile = _m3b_mg_tile(mg_ptr, slot, h, H, C, True)
    dks = _m3_dot(tl.load(mgt_tile), qt, PREC, e_rev[:, None] * vds, a_lo=tl.load(mgt_tile + C * C))
    tl.store(ds_ptr + half * T * H + th_, tl.sum(dks * kt, axis=1), mask=valid)
    ge = gam * tl.load(etok_ptr + th_, mask=valid, other=0.0)
    if half == 0:  # reloaded (L1 / L2) rather than kept through the dot: under the 168 cap, offline, the rotated
        # half's branch spills 82 instead of 121 instructions (2160 -> 1944 SASS); the other half's gains nothing
        qt = _fwd_tilde_half(qr_ptr, q_ptr, qb_ptr, tok, h, valid, half, H, N)
    dkt = sc[:, None] * dks + ge[:, None] * qt + tl.where((tok == eos - 1)[:, None],
                                                          tl.load(dfk_ptr + (s * H + h) * N + cols)[None, :], 0.0)
    _m3b_side_out(dkt, kt, tok, vmask, slot, h, half, cos_ptr, sin_ptr, dphi_ptr, dphis_ptr, dkp_ptr, dkbp_ptr,
                  H, N, NA, C)


@triton.jit
def _m3b_side(
    slot, h, SIDE: tl.constexpr, HALF: tl.constexpr, qr_ptr, kr_ptr, q_ptr, k_ptr, qb_ptr, kb_ptr, v_ptr, scal_ptr,
    elam_ptr, dy_ptr, cu_ptr, cos_ptr, sin_ptr, states_ptr, dstates_ptr, dfk_ptr, mg_ptr, etok_ptr, dqp_ptr,
    dkp_ptr, dphi_ptr, dphis_ptr, dl_ptr, dlam_ptr, ds_ptr, dqbp_ptr, dkbp_ptr, S, T, NSLOT, H: tl.constexpr,
    P: tl.constexpr, N: tl.constexpr, NA: tl.constexpr, C: tl.constexpr, SB: tl.constexpr, PREC: tl.constexpr,
    PDL: tl.constexpr,
):
    """One program of `_m3b_sides_kernel`: the q side (SIDE 0) or the k side (1) of state half HALF."""
    if SIDE == 0:
        _m3b_qside(slot, h, HALF, qr_ptr, kr_ptr, q_ptr, k_ptr, qb_ptr, kb_ptr, scal_ptr, elam_ptr, dy_ptr,
                   cu_ptr, cos_ptr, sin_ptr, states_ptr, dstates_ptr, mg_ptr, etok_ptr, dqp_ptr, dphi_ptr, dphis_ptr,
                   dl_ptr, dlam_ptr, dqbp_ptr, S, T, NSLOT, H, P, N, NA, C, SB, PREC, PDL)
    else:
        _m3b_kside(slot, h, HALF, qr_ptr, kr_ptr, q_ptr, k_ptr, qb_ptr, kb_ptr, v_ptr, scal_ptr, cu_ptr, cos_ptr,
                   sin_ptr, dstates_ptr, dfk_ptr, mg_ptr, etok_ptr, dkp_ptr, dphi_ptr + T * H * NA,
                   dphis_ptr + NSLOT * H * NA, dl_ptr, dlam_ptr, ds_ptr, dkbp_ptr, S, T, NSLOT, H, P, N, NA, C, SB,
                   PREC, PDL)


@triton.jit
def _m3b_sides_kernel(
    qr_ptr, kr_ptr, q_ptr, k_ptr, qb_ptr, kb_ptr, v_ptr, scal_ptr, elam_ptr, dy_ptr, cu_ptr, cos_ptr, sin_ptr,
    states_ptr, dstates_ptr,
    dfk_ptr, mg_ptr, etok_ptr, dqp_ptr, dkp_ptr, dphi_ptr, dphis_ptr, dl_ptr, dlam_ptr, ds_ptr, dqbp_ptr, dkbp_ptr,
    io_ptr, S, T, NSLOT, H: tl.constexpr, P: tl.constexpr, N: tl.constexpr, NA: tl.constexpr, C: tl.constexpr,
    SB: tl.constexpr, PREC: tl.constexpr, V_WORD: tl.constexpr, PDL: tl.constexpr,
):
    """Grid (4 x chunk slots, H): the chunk body's q side (z = 0, 1: state half z) and k side (z = 2, 3: half z - 2)
    in one launch (one host launch less than two kernels), each z a branch built for its side and half (until
    session 17 the half was a run-time value inside two branches: its tiles and stores merged both halves' layouts
    through register moves and layout conversions). z varies fastest, so the four programs of one chunk and
    head run side by side and share their loads of Q~, K~, dY, M o G and dS_out through L2 (with z slowest, until
    session 8, each plane of 1184 programs at c1 had streamed ~150 MB through the L2 before the next plane re-read
    the same tiles). dphi / dphis hold two planes, the q side's and the k side's; each side gets its own.
    PDL (launched with programmatic dependent launch after the intra kernel, kernels/common/pdl.py): a program loads
    what no intra-kernel result is (dY, the states and their gradients, Q~, K~, V) and runs the dot on them before it
    waits for the intra kernel."""
    v_ptr = posted_pointer(v_ptr, io_ptr, V_WORD)
    z = tl.program_id(0) % 4
    slot = tl.program_id(0) // 4
    h = tl.program_id(1)
    for zz in tl.static_range(4):  # one branch per side and half, each built for its half (HALF a constexpr)
        if z == zz:
            _m3b_side(slot, h, zz // 2, zz % 2, qr_ptr, kr_ptr, q_ptr, k_ptr, qb_ptr, kb_ptr, v_ptr, scal_ptr,
                      elam_ptr, dy_ptr, cu_ptr, cos_ptr, sin_ptr, states_ptr, dstates_ptr, dfk_ptr, mg_ptr, etok_ptr,
                      dqp_ptr, dkp_ptr, dphi_ptr, dphis_ptr, dl_ptr, dlam_ptr, ds_ptr, dqbp_ptr, dkbp_ptr, S, T,
                      NSLOT, H, P, N, NA, C, SB, PREC, PDL)


@triton.jit
def _m3b_dphi_carry_kernel(cu_ptr, dfa_ptr, dphis_ptr, carry_ptr, NSLOT, H: tl.constexpr, NA: tl.constexpr,
                           C: tl.constexpr, CB: tl.constexpr, PDL_NEXT: tl.constexpr):
    """Grid (S, H): the angle-gradient carry entering each chunk of sequence s from its end, (slots, H, NA) fp32:
    dfinal_angle plus the dPhi sums (q side + k side, `_m3b_side_out`) of the sequence's later chunks. Tiles of CB
    chunks from the last chunk backwards: within a tile an exclusive cumsum (the tile loaded once more, shifted by
    one chunk), between tiles a running sum (fixed orders: bit-identical repeats). O(chunks) per sequence: until
    session 15 each chunk's program summed all later chunks itself, quadratic in a sequence's chunk count (the
    finish kernel 0.985 ms at 32768 tokens in one sequence, 6.87 ms at 131072; bench/mamba3/NOTES.md).
    PDL_NEXT: the finish kernel, launched with PDL after it, may start at once (its GQA-reduce programs read nothing
    this kernel writes; its angle programs wait for it: kernels/common/pdl.py)."""
    pdl_launch_dependents(PDL_NEXT)
    s = tl.program_id(0)
    h = tl.program_id(1)
    bos = tl.load(cu_ptr + s)
    nchunks = tl.cdiv(tl.load(cu_ptr + s + 1) - bos, C)
    first = bos // C + s  # the slot of chunk 0
    m = tl.arange(0, NA)
    r = tl.arange(0, CB)
    g = tl.load(dfa_ptr + (s * H + h) * NA + m)
    for tile in range(0, tl.cdiv(nchunks, CB)):
        cc = nchunks - 1 - tile * CB - r  # chunks, descending
        nxt = cc + 1  # the chunk after each (none after the last)
        ok = (cc >= 0)[:, None]
        okn = ((r > 0) & (nxt >= 0))[:, None]
        blk = ((first + cc) * H + h)[:, None] * NA + m[None, :]
        blkn = ((first + nxt) * H + h)[:, None] * NA + m[None, :]
        d = tl.load(dphis_ptr + blk, mask=ok, other=0.0) + tl.load(dphis_ptr + NSLOT * H * NA + blk, mask=ok,
                                                                   other=0.0)
        dn = tl.load(dphis_ptr + blkn, mask=okn, other=0.0) + tl.load(dphis_ptr + NSLOT * H * NA + blkn, mask=okn,
                                                                      other=0.0)
        tl.store(carry_ptr + blk, g[None, :] + tl.cumsum(dn, axis=0), mask=ok)
        g += tl.sum(d, axis=0)


@triton.jit
def _m3b_angle(
    slot, h, dt_ptr, trap_ptr, ang_ptr, cu_ptr, carry_ptr, dphi_ptr, dl_ptr, dlam_ptr, ds_ptr, etok_ptr,
    qk_ptr, dadt_ptr, ddt_ptr, dtrap_ptr, dang_ptr,
    S, T, NSLOT, H: tl.constexpr, NA: tl.constexpr, C: tl.constexpr, SB: tl.constexpr,
):
    """(`_m3b_finish_kernel`, per chunk slot and head) The chunk body's per-token results combined (fixed
    order), then the terms that cross chunk edges, for one chunk. dl = its five parts (intra, q side and k side per
    state half), dadt = the reverse in-chunk cumsum of dl + dLambda (its four parts); ds = the k side's two halves,
    dgamma = ds + e q^.k^. The reverse cumsum of dPhi (q side + k side) plus dfinal_angle (-> dangles, the angle part
    of ddt; F1, F2) starts from the carry `_m3b_dphi_carry_kernel` stored (dfinal_angle plus the per-chunk dPhi
    sums of the sequence's later chunks); the shifted-gamma term gamma'_{t-1} = dt_t (1 - p_t) (-> ddt, dtrap; F5)
    reads ds of the token before (none for the sequence's first token)."""
    PI: tl.constexpr = 3.141592653589793
    s, bos, eos, c = _fwd_locate_chunk(cu_ptr, slot, S, SB, C)
    t0 = bos + c * C
    if t0 < eos:
        i = tl.arange(0, C)
        m = tl.arange(0, NA)
        g_carry = tl.load(carry_ptr + (slot * H + h) * NA + m)
        tok = t0 + i
        valid = tok < eos
        th_ = tok * H + h
        TH = T * H
        dl = tl.load(dl_ptr + th_, mask=valid, other=0.0)
        for part in tl.static_range(1, 5):
            dl += tl.load(dl_ptr + part * TH + th_, mask=valid, other=0.0)
        dlam = tl.load(dlam_ptr + slot * H + h)
        for part in tl.static_range(1, 4):
            dlam += tl.load(dlam_ptr + (part * NSLOT + slot) * H + h)
        tl.store(dadt_ptr + th_, tl.sum(dl, axis=0) - tl.cumsum(dl, axis=0) + dl + dlam, mask=valid)
        hna = tok[:, None] * (H * NA) + h * NA + m[None, :]
        dphi = (tl.load(dphi_ptr + hna, mask=valid[:, None], other=0.0)
                + tl.load(dphi_ptr + TH * NA + hna, mask=valid[:, None], other=0.0))
        gphi = g_carry[None, :] + tl.sum(dphi, axis=0)[None, :] - tl.cumsum(dphi, axis=0) + dphi
        dt_c = tl.load(dt_ptr + th_, mask=valid, other=0.0)
        p_c = tl.sigmoid(tl.load(trap_ptr + th_, mask=valid, other=0.0).to(tl.float32))
        th = _m3b_tanh(tl.load(ang_ptr + hna, mask=valid[:, None], other=0.0).to(tl.float32))
        tl.store(dang_ptr + hna, (gphi * dt_c[:, None] * PI * (1.0 - th * th)).to(dang_ptr.dtype.element_ty),
                 mask=valid[:, None])
        dgam = (tl.load(ds_ptr + th_, mask=valid, other=0.0) + tl.load(ds_ptr + TH + th_, mask=valid, other=0.0)
                + tl.load(etok_ptr + th_, mask=valid, other=0.0) * tl.load(qk_ptr + th_, mask=valid, other=0.0))
        prev = valid & (tok > bos)
        ds_prev = (tl.load(ds_ptr + th_ - H, mask=prev, other=0.0)
                   + tl.load(ds_ptr + TH + th_ - H, mask=prev, other=0.0))
        tl.store(ddt_ptr + th_, dgam * p_c + tl.sum(gphi * PI * th, axis=1) + ds_prev * (1.0 - p_c), mask=valid)
        tl.store(dtrap_ptr + th_, ((dt_c * dgam - dt_c * ds_prev) * p_c * (1.0 - p_c)).to(dtrap_ptr.dtype.element_ty),
                 mask=valid)


@triton.jit
def _m3b_head_sum(ptrs, msk, H: tl.constexpr, N: tl.constexpr, BT: tl.constexpr):
    """Sum over the H heads of per-head (BT, N) rows at ``ptrs`` (head h at ptrs + h * N; bf16 or fp32,
    Mamba3BwdConfig.head_partials), head after head in one per-thread fp32 accumulator (fixed order)."""
    acc = tl.zeros([BT, N], dtype=tl.float32)
    for hh in tl.static_range(H):
        acc += tl.load(ptrs + hh * N, mask=msk, other=0.0).to(tl.float32)
    return acc


@triton.jit
def _m3b_reduce(
    pid, dqp_ptr, dkp_ptr, dq_ptr, dk_ptr, dqbp_ptr, dkbp_ptr, ddp_ptr, dqb_ptr, dkb_ptr, dd_ptr,
    T, NSLOT,
    H: tl.constexpr, N: tl.constexpr, BT: tl.constexpr, BS: tl.constexpr,
):
    """(`_m3b_finish_kernel`, program pid of ceil(T/BT) + H) Token blocks sum dq_hat/dk_hat over the H heads (GQA), head
    after head into a (BT, N) fp32 tile that each thread keeps in registers (no cross-thread reduction: Nsight
    Compute showed the old (H, BT, N) tile sum stalled on the shared-memory queue, bench/mamba3/NOTES.md "Session
    4"); the last H programs sum one head's per-chunk-slot bias and D partials, BS slots per tile. Fixed reduction
    orders (bit-identical repeats)."""
    n = tl.arange(0, N)
    nblocks = tl.cdiv(T, BT)
    if pid < nblocks:
        tok = pid * BT + tl.arange(0, BT)
        msk = (tok < T)[:, None]
        off = tok[:, None] * (H * N) + n[None, :]
        out = tok[:, None] * N + n[None, :]
        tl.store(dq_ptr + out, _m3b_head_sum(dqp_ptr + off, msk, H, N, BT).to(dq_ptr.dtype.element_ty), mask=msk)
        tl.store(dk_ptr + out, _m3b_head_sum(dkp_ptr + off, msk, H, N, BT).to(dk_ptr.dtype.element_ty), mask=msk)
    else:
        h = pid - nblocks
        sl = tl.arange(0, BS)
        acc_qb = tl.zeros([N], dtype=tl.float32)
        acc_kb = tl.zeros([N], dtype=tl.float32)
        acc_d = tl.sum(tl.zeros([BS], dtype=tl.float32), axis=0)
        for s0 in range(0, NSLOT, BS):
            si = s0 + sl
            smask = si < NSLOT
            off = si[:, None] * (H * N) + h * N + n[None, :]
            acc_qb += tl.sum(tl.load(dqbp_ptr + off, mask=smask[:, None], other=0.0), axis=0)
            acc_kb += tl.sum(tl.load(dkbp_ptr + off, mask=smask[:, None], other=0.0), axis=0)
            acc_d += tl.sum(tl.load(ddp_ptr + si * H + h, mask=smask, other=0.0), axis=0)
        tl.store(dqb_ptr + h * N + n, acc_qb)
        tl.store(dkb_ptr + h * N + n, acc_kb)
        tl.store(dd_ptr + h, acc_d)


@triton.jit
def _m3b_finish_kernel(
    dt_ptr, trap_ptr, ang_ptr, cu_ptr, carry_ptr, dphi_ptr, dl_ptr, dlam_ptr, ds_ptr, etok_ptr, qk_ptr,
    dadt_ptr, ddt_ptr, dtrap_ptr, dang_ptr,
    dqp_ptr, dkp_ptr, dq_ptr, dk_ptr, dqbp_ptr, dkbp_ptr, ddp_ptr, dqb_ptr, dkb_ptr, dd_ptr,
    S, T, NSLOT, io_ptr, H: tl.constexpr, N: tl.constexpr, NA: tl.constexpr, C: tl.constexpr, SB: tl.constexpr,
    BT: tl.constexpr, BS: tl.constexpr, ANGLES_WORD: tl.constexpr, DANGLES_WORD: tl.constexpr, DQ_WORD: tl.constexpr,
    DK_WORD: tl.constexpr, DADT_WORD: tl.constexpr, DDT_WORD: tl.constexpr, DTRAP_WORD: tl.constexpr,
    DQ_BIAS_WORD: tl.constexpr, DK_BIAS_WORD: tl.constexpr, DD_WORD: tl.constexpr, PDL: tl.constexpr,
):
    """Grid (ceil(T/BT) + H + NSLOT * H,): the last step in one launch (one host launch less than two kernels):
    the first ceil(T/BT) + H programs are `_m3b_reduce`'s, the others `_m3b_angle`'s (slot, head). The reduce
    programs, each streaming 32 heads' rows, are the longest, so they start first (until session 17 they came last
    and ran in the launch's tail). Every gradient it writes may be a posted tensor (*_WORD >= 0: a graph writes
    them at the call's result addresses, no copy node after this kernel). PDL (launched with programmatic dependent
    launch after the dPhi carry kernel, kernels/common/pdl.py): the reduce programs run beside that kernel (they read
    the side kernels' partials, written two launches back, and write results it does not read); the angle programs
    wait for its carry."""
    ang_ptr = posted_pointer(ang_ptr, io_ptr, ANGLES_WORD)
    pid = tl.program_id(0)
    nreduce = tl.cdiv(T, BT) + H
    if pid < nreduce:
        dq_ptr = posted_pointer(dq_ptr, io_ptr, DQ_WORD)
        dk_ptr = posted_pointer(dk_ptr, io_ptr, DK_WORD)
        dqb_ptr = posted_pointer(dqb_ptr, io_ptr, DQ_BIAS_WORD)
        dkb_ptr = posted_pointer(dkb_ptr, io_ptr, DK_BIAS_WORD)
        dd_ptr = posted_pointer(dd_ptr, io_ptr, DD_WORD)
        _m3b_reduce(pid, dqp_ptr, dkp_ptr, dq_ptr, dk_ptr, dqbp_ptr, dkbp_ptr, ddp_ptr, dqb_ptr, dkb_ptr,
                    dd_ptr, T, NSLOT, H, N, BT, BS)
    else:
        slot_head = pid - nreduce
        pdl_wait(PDL)
        dang_ptr = posted_pointer(dang_ptr, io_ptr, DANGLES_WORD)
        dadt_ptr = posted_pointer(dadt_ptr, io_ptr, DADT_WORD)
        ddt_ptr = posted_pointer(ddt_ptr, io_ptr, DDT_WORD)
        dtrap_ptr = posted_pointer(dtrap_ptr, io_ptr, DTRAP_WORD)
        _m3b_angle(slot_head // H, slot_head % H, dt_ptr, trap_ptr, ang_ptr, cu_ptr, carry_ptr, dphi_ptr, dl_ptr,
                   dlam_ptr, ds_ptr, etok_ptr, qk_ptr, dadt_ptr, ddt_ptr, dtrap_ptr, dang_ptr, S, T, NSLOT, H, NA, C,
                   SB)


class Mamba3BwdConfig(NamedTuple):
    """Launch configuration (measured on an H200, see bench/mamba3/NOTES.md `## Backward`, `## Speed pass`).

    num_warps, intra_maxnreg: warps and register cap (0: none; applied on CUDA only) of the chunk body's intra-chunk
    kernel (session 27, the kernel that loads the forward's masked scores: offline, sm_90, 199 registers uncapped
    (two programs per SM), 0 spill instructions at the 168 cap (three per SM); H200, c1, graph: intra 0.072 ->
    0.063 ms, the call 0.435 -> 0.420 ms queued; 8 warps at 128 0.077, NOTES "Session 27"); side_warps,
    side_maxnreg: warps and register cap (0: none; applied on CUDA only) of its q-side and k-side kernel (H200,
    c1, NOTES "Session 6": 4 warps uncapped 0.608 ms bwd; 8 warps 0.724; caps 168 / 128 0.621 / 0.703; intra at 8
    warps 0.644. Session 15, the leaner side kernel: sides 0.211 ms uncapped, 0.202 at 168 (three programs per SM),
    0.231 at 128; same bits. Session 18,
    the kernel bound by its shared-memory traffic: at 8 warps 0.239 ms capped at 128, 0.297 uncapped or at 168,
    against 0.187 at 4 warps and 168; intra at 8 warps 0.112 against 0.073. Session 19, the dots split into bf16:
    uncapped, 247 registers (two programs per SM), no spills. Session 20, dY split by the gate kernel: 168 (three
    programs per SM; 0-121 spill instructions per branch offline) 0.153 ms at c1 against 0.162 uncapped, 0.170 at
    200);
    input_precision: tl.dot precision of the intra kernel's other dots ("tf32", "tf32x3" or "ieee");
    transposed_precision: the same, or "bf16x3" (`_m3_dot`), for the dots whose fp32 operands wgmma would need
    transposed in shared memory, and for those with dY (stored split by the gate kernel): the intra kernel's
    (M o A)^T dY and G = dY V^T, the chain's and the local-term kernel's dY^T diag(e^l) Q~; side_precision: the
    same for the side kernel's four dots (all of them transposed-operand dots);
    dstate_scan: False runs the state-gradient chain as one serial kernel (measured), True as a chunk-parallel
    local-term kernel plus an elementwise reverse scan (measured slower: NOTES "Session 5", "Session 6");
    dstate_warps, dstate_stages: warps of the chain kernel (or of the local-term kernel) and the chain loop's
    software-pipelining stages (H200 c1: 1 stage 0.060 ms, 2 0.069, 3 0.070; same bits); scan_block: state
    elements (of 64 x 128) per scan program, a power of two;
    finish_warps, reduce_tokens: warps of the finish kernel and tokens per GQA-reduce program, a power of two (each
    program keeps a (reduce_tokens, 128) fp32 accumulator per tensor: 16 registers a thread at 4 warps). Module
    constants until session 22, when 16 tokens replaced 8: H200, direct launches, the finish kernel at c1 0.042 ->
    0.036 ms, the call -6 to -10 us at four panels, the same bits; 2 warps 0.037 ms alone, level with the default
    combined with 16 tokens; 32 tokens level at 4 warps, spilling at 2 (0.457 ms); bench/mamba3/NOTES.md "Session
    22".
    head_partials: the dtype of the side kernel's per-head dq / dk rows, (T, H, N) each, that the finish kernel sums
    over the heads in fp32: "bf16" (the default since session 25: half the bytes written and read back, each head's
    row rounded once; H200, c1: sides 0.150 -> 0.140 ms, finish 0.036 -> 0.031, the public entry -16 to -19 us
    queued at c1-c7; dq / dk norm-relative error against float64 1.65e-3 -> 2.34e-3, their target 3.1e-3;
    bench/mamba3/NOTES.md "Session 25") or "fp32" (dq / dk as close to float64 as the reference);
    finish_pdl: the finish kernel launched with programmatic dependent launch after the dPhi carry kernel (its GQA
    reduce beside that kernel; CUDA sm_90+ only, ``kernels/common/pdl.py``; session 41); side_pdl: the side kernel
    likewise after the intra kernel (its programs' loads and first dot before their wait; session 41); intra_pdl:
    the intra kernel likewise after its stream predecessor, which in a graph with forked side streams is the
    forward's chunk scan (its programs' dY V^T and M o G before their wait; session 42; elsewhere a kernel that
    triggers nothing, so no overlap).
    """

    num_warps: int = 4
    intra_maxnreg: int = 168
    side_warps: int = 4
    side_maxnreg: int = 168  # H200 (s20 run 1): sides c1 0.153 ms vs 0.162 uncapped, c4 0.164 vs 0.173
    input_precision: str = "tf32"
    side_precision: str = "bf16x3"  # H200 (s19 run 5): sides c1 0.189 ms vs tf32 0.188, c4 0.204 vs 0.202; closer to
    # float64 (s19 runs 4 / 5, c1: dq 1.70e-3 vs 1.95e-3, ddt 3.8e-4 vs 1.03e-3, dangles 1.83e-3 vs 2.48e-3)
    transposed_precision: str = "bf16x3"  # H200 c1 (s19 run 5): intra 0.071 vs 0.073 ms, chain 0.046 vs 0.054
    dstate_scan: bool = False
    dstate_warps: int = 4  # H200, q~ loaded (3665772): c1 0.120 ms vs 0.121 at 8 warps, c3 0.113 vs 0.131, same bits
    dstate_stages: int = 1  # H200 (5cd0d97): c1 0.060 ms vs 0.070 at 3 stages, c3 0.059 vs 0.068, same bits
    scan_block: int = 1024
    finish_warps: int = 4
    reduce_tokens: int = 16
    head_partials: str = "bf16"
    finish_pdl: bool = True
    side_pdl: bool = True
    intra_pdl: bool = True


DEFAULT_BWD_CONFIG = Mamba3BwdConfig()


class Mamba3BwdGrads(NamedTuple):
    """The 11 input gradients, in the dtype of their input (spec "Decisions for this project")."""

    dq: torch.Tensor  # (T, 1, 128) bf16
    dk: torch.Tensor  # (T, 1, 128) bf16
    dv: torch.Tensor  # (T, 32, 64) bf16
    dadt: torch.Tensor  # (T, 32) fp32
    ddt: torch.Tensor  # (T, 32) fp32
    dtrap: torch.Tensor  # (T, 32) bf16
    dq_bias: torch.Tensor  # (32, 128) fp32
    dk_bias: torch.Tensor  # (32, 128) fp32
    dangles: torch.Tensor  # (T, 32, 32) bf16
    dd: torch.Tensor  # (32,) fp32
    dz: torch.Tensor  # (T, 32, 64) bf16


def allocate_grads(q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z) -> Mamba3BwdGrads:
    """Uninitialised gradients (contiguous, each shaped and typed like its input)."""
    return Mamba3BwdGrads(*(torch.empty_like(x, memory_format=torch.contiguous_format)
                            for x in (q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z)))


def bwd_gate(dout, z, y, dz=None, dy=None, posted: Posted | None = None) -> None:
    """Launch the gate kernel over (T, 32, 64): dz (like z) from dout, z and the forward's y (fp32) if ``dz`` is
    given; dY = dout * silu(z), split into bf16 hi and lo, (T, 32, 2, 64) (``allocate_state_grads``), into ``dy``
    if given (y is then not needed: None). ``posted``: a Posted whose "dout", "z" (read) and "dz" (written)
    replace those tensors (a graph)."""
    numel = dout.numel()
    _m3b_gate_kernel[(triton.cdiv(numel, _GATE_BLOCK),)](
        dout, z, dout if y is None else y, dout if dz is None else dz, dout if dy is None else dy, NUMEL=numel,
        P=dout.shape[-1], BLOCK=_GATE_BLOCK, DZ=dz is not None, DY=dy is not None, num_warps=4,
        **posted_kwargs(posted, dout, "dout", "z", "dz"),
    )


def allocate_state_grads(v, q, cu_seqlens) -> tuple:
    """Uninitialised (dY (T, 32, 2, 64) bf16 (hi and lo halves, `_m3b_gate_kernel`), dstates (T // 64 + S, 32,
    64, 128) fp32) for v (T, 32, 64), q (T, 1, 128) and cu_seqlens (S + 1,): what ``bwd_gate`` and
    ``bwd_state_grads`` write for the chunk kernels."""
    T, H, P = v.shape
    f32 = torch.float32
    return (torch.empty((T, H, 2, P), device=v.device, dtype=torch.bfloat16),
            torch.empty((T // CHUNK + cu_seqlens.shape[0] - 1, H, P, q.shape[-1]), device=v.device, dtype=f32))


def bwd_state_grads(q_rot, q, q_bias, adt, dy, cu_seqlens, dfinal_ssm, dstates, *,
                    config=DEFAULT_BWD_CONFIG, posted: Posted | None = None) -> None:
    """Launch the state-gradient chain (spec §7.2): the gradient of the state leaving every chunk, (T // 64 + S, 32,
    64, 128) fp32 in the forward's chunk-state layout, into ``dstates`` (``allocate_state_grads``), from the
    forward's rotated half of q~ (T, 32, 64) fp32 with q (T, 1, 128) bf16 and q_bias (32, 128) fp32 (the other
    half), adt (T, 32) fp32, dY (T, 32, 2, 64) bf16 halves (``bwd_gate``) and dfinal_ssm (S, 32, 64, 128) fp32
    (or, with ``posted``, the Posted's "dfinal_ssm": a graph)."""
    T, H = q_rot.shape[:2]
    N = q.shape[-1]
    P = dy.shape[-1]
    S = cu_seqlens.shape[0] - 1
    nslot = T // CHUNK + S
    if P * N % config.scan_block != 0:
        raise ValueError(f"config.scan_block: expected a power of two dividing {P * N}, got {config.scan_block}")
    if config.dstate_scan:
        _m3b_dstate_local_kernel[(nslot, H)](
            q_rot, q, q_bias, adt, dy, cu_seqlens, dstates, S,
            H=H, P=P, N=N, C=CHUNK, SB=triton.next_power_of_2(S + 1), TPREC=config.transposed_precision,
            num_warps=config.dstate_warps,
        )
        _m3b_dstate_scan_kernel[(P * N // config.scan_block, H, S)](
            adt, cu_seqlens, dfinal_ssm, dstates, H=H, PN=P * N, C=CHUNK, BLOCK=config.scan_block, num_warps=4,
            **posted_kwargs(posted, cu_seqlens, "dfinal_ssm"),
        )
    else:
        _m3b_dstate_kernel[(H, S, 2)](
            q_rot, q, q_bias, adt, dy, cu_seqlens, dfinal_ssm, dstates,
            H=H, P=P, N=N, C=CHUNK, TPREC=config.transposed_precision, num_warps=config.dstate_warps,
            num_stages=config.dstate_stages, **posted_kwargs(posted, cu_seqlens, "dfinal_ssm"),
        )


def mamba3_siso_bwd(q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens, saved,
                    dout, dfinal_angle, dfinal_ssm, dfinal_k, dfinal_v, *, config=DEFAULT_BWD_CONFIG, grads=None,
                    state_grads=None, posted: Posted | None = None):
    """Full VJP of the Mamba-3 SISO varlen operator (spec §7.1) from the forward's saved tensors.

    Inputs in the project layout (spec "Decisions"): q, k (T, 1, 128) bf16; v, z (T, 32, 64) bf16; adt, dt (T, 32)
    fp32; trap (T, 32) bf16; q_bias, k_bias (32, 128) fp32; angles (T, 32, 32) bf16; d (32,) fp32; cu_seqlens
    (S+1,) int32. `saved` is the forward's `Mamba3FwdSaved`: y fp32 (T, 32, 64) pre-gate output (or None: the
    forward wrote dz into grads.dz, ``mamba3_siso_fwd(gate_grad=...)``; `grads` must then be given), cos_phi and
    sin_phi fp32 (T, 32, 32) of the wrapped cumulative angle, chunk_states fp32 (T//64 + S, 32, 64, 128) state
    entering each chunk (sequence s, chunk c at cu_seqlens[s]//64 + s + c), q_rot and k_rot fp32 (T, 32, 64), the
    biased and rotated dims 0..63 of q~ and k~ per head (the kernels load them and form dims 64..127 from q, k and
    the biases), chunk_scalars fp32 (T//64 + S, 32, 3, 64) per-token ell, gamma, s per chunk slot, masked_scores
    fp32 (T//64 + S, 32, 64, 64) decay o A per chunk slot, qk fp32 (T, 32) q^.k^ (nothing is validated: the public
    entries do that). Cotangents: dout
    (T, 32, 64), dfinal_angle (S, 32, 32), dfinal_ssm (S, 32, 64, 128), dfinal_k (S, 32, 128), dfinal_v
    (S, 32, 64).
    `config`: a Mamba3BwdConfig (warps, dot precision). `grads`: None (new tensors) or a `Mamba3BwdGrads` of
    tensors to write, as `allocate_grads` makes them (not checked), which is then returned. `state_grads`: None, or
    (dY, dstates) already computed by `bwd_gate` and `bwd_state_grads` (a graph runs those beside the forward, whose
    chunk scan writes dz): then only the chunk kernels are launched. `posted`: a Posted whose "v" (read)
    and "dv" (written) the chunk kernels use instead of those tensors, "angles" (read) and the gradients it writes
    (dangles, dq, dk, dadt, ddt, dtrap, dq_bias, dk_bias, dd) the finish kernel, "dfinal_ssm" the state-gradient
    chain and "dout", "z" (and "dz" when saved.y is given) the gate (a graph).
    Returns `Mamba3BwdGrads` (dq, dk, dv, dadt, ddt, dtrap, dq_bias, dk_bias, dangles, dd, dz); no host sync.
    """
    if config.reduce_tokens < 1 or config.reduce_tokens & (config.reduce_tokens - 1):
        raise ValueError(f"config.reduce_tokens: expected a power of two, got {config.reduce_tokens}")
    for name in (f for f in config._fields if f.endswith("_pdl")):  # the launch switches, each a bool
        if not isinstance(getattr(config, name), bool):
            raise ValueError(f"config.{name}: expected a bool, got {getattr(config, name)!r}")
    if config.head_partials not in _HEAD_PARTIAL_DTYPES:
        raise ValueError(f"config.head_partials: expected one of {sorted(_HEAD_PARTIAL_DTYPES)}, "
                         f"got {config.head_partials!r}")
    T, H, P = v.shape
    N = q.shape[-1]
    NA = angles.shape[-1]
    S = cu_seqlens.shape[0] - 1
    nslot = T // CHUNK + S  # chunk slots, as the forward's chunk_states
    dev = v.device
    f32 = torch.float32
    (q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens, y, cos_phi, sin_phi, chunk_states, q_rot,
     k_rot, chunk_scalars, masked_scores, qk, dout, dfinal_angle, dfinal_ssm, dfinal_k, dfinal_v) = contiguous_each(
        (q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens, *saved, dout, dfinal_angle, dfinal_ssm,
         dfinal_k, dfinal_v))
    if y is None and grads is None:
        raise ValueError("saved.y is None (the forward wrote dz): pass the grads it wrote dz into")
    grads = allocate_grads(q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z) if grads is None else grads
    dv = grads.dv
    sb = triton.next_power_of_2(S + 1)  # (>= S + 1: _fwd_locate_chunk reads cu_seqlens[0..S])
    if state_grads is None:
        dy, dstates = allocate_state_grads(v, q, cu_seqlens)  # dY = dout * silu(z)
        bwd_gate(dout, z, y, None if y is None else grads.dz, dy, posted=posted)
        bwd_state_grads(q_rot, q, q_bias, adt, dy, cu_seqlens, dfinal_ssm, dstates, config=config, posted=posted)
    else:
        dy, dstates = state_grads
    # the chunk body in two launches (intra-chunk part; q side and k side per state half); their per-token and
    # per-slot partial results are combined in a fixed order by the finish kernel
    mg = torch.empty((nslot, H, 2, CHUNK, CHUNK), device=dev, dtype=torch.bfloat16)  # M o G split: hi, lo
    dl_parts = torch.empty((5, T, H), device=dev, dtype=f32)  # dl: intra, q side halves, k side halves
    dlam_parts = torch.empty((4, nslot, H), device=dev, dtype=f32)  # dLambda: q side halves, k side halves
    ds_parts = torch.empty((2, T, H), device=dev, dtype=f32)  # ds per k-side half
    e_tok = torch.empty((T, H), device=dev, dtype=f32)  # dY . v
    part_dtype = _HEAD_PARTIAL_DTYPES[config.head_partials]
    dq_part = torch.empty((T, H, N), device=dev, dtype=part_dtype)  # per head, rotated back (the GQA partials)
    dk_part = torch.empty((T, H, N), device=dev, dtype=part_dtype)
    dphi = torch.empty((2, T, H, NA), device=dev, dtype=f32)  # q side, k side
    dphi_sums = torch.empty((2, nslot, H, NA), device=dev, dtype=f32)
    dqb_part = torch.empty((nslot, H, N), device=dev, dtype=f32)
    dkb_part = torch.empty((nslot, H, N), device=dev, dtype=f32)
    dd_part = torch.empty((nslot, H), device=dev, dtype=f32)
    side_scalars = torch.empty((nslot, H, 4, CHUNK), device=dev, dtype=f32)  # e^l, e^{L-l}, gamma, s
    exp_lam = torch.empty((nslot, H), device=dev, dtype=f32)  # e^L
    sizes = dict(H=H, P=P, N=N, C=CHUNK, SB=sb)
    side_pdl = pdl_applies(v, config.side_pdl)
    intra_pdl = pdl_applies(v, config.intra_pdl)
    side_launch = dict(num_warps=config.side_warps, **maxnreg_option(config.side_maxnreg, dev),
                       **pdl_launch_option(side_pdl))
    _m3b_intra_kernel[(nslot, H)](
        k_rot, k, k_bias, v, chunk_scalars, masked_scores, qk, d, dy, cu_seqlens, dstates, dfinal_v, mg, dv, dl_parts,
        e_tok, dd_part, side_scalars, exp_lam,
        S=S, **sizes, PREC=config.input_precision, TPREC=config.transposed_precision, PDL=intra_pdl,
        PDL_NEXT=side_pdl, num_warps=config.num_warps, **maxnreg_option(config.intra_maxnreg, dev),
        **posted_kwargs(posted, cu_seqlens, "v", "dv"), **pdl_launch_option(intra_pdl),
    )
    _m3b_sides_kernel[(4 * nslot, H)](
        q_rot, k_rot, q, k, q_bias, k_bias, v, side_scalars, exp_lam, dy, cu_seqlens, cos_phi, sin_phi, chunk_states,
        dstates, dfinal_k, mg, e_tok, dq_part, dk_part, dphi, dphi_sums, dl_parts, dlam_parts, ds_parts, dqb_part,
        dkb_part,
        S=S, T=T, NSLOT=nslot, NA=NA, **sizes, PREC=config.side_precision, PDL=side_pdl, **side_launch,
        **posted_kwargs(posted, cu_seqlens, "v"),
    )
    angle_carry = torch.empty((nslot, H, NA), device=dev, dtype=f32)  # entering each chunk from its end
    pdl = pdl_applies(v, config.finish_pdl)
    _m3b_dphi_carry_kernel[(S, H)](
        cu_seqlens, dfinal_angle, dphi_sums, angle_carry, nslot, H=H, NA=NA, C=CHUNK, CB=_ANGLE_SLOTS, PDL_NEXT=pdl,
        num_warps=1,
    )
    dq, dk, _, dadt, ddt, dtrap, dq_bias, dk_bias, dangles, dd, _ = grads
    _m3b_finish_kernel[(triton.cdiv(T, config.reduce_tokens) + H + nslot * H,)](
        dt, trap, angles, cu_seqlens, angle_carry, dphi, dl_parts, dlam_parts, ds_parts, e_tok, qk,
        dadt, ddt, dtrap, dangles, dq_part, dk_part, dq, dk, dqb_part, dkb_part, dd_part, dq_bias, dk_bias, dd,
        S, T, nslot, H=H, N=N, NA=NA, C=CHUNK, SB=sb, BT=config.reduce_tokens, BS=_REDUCE_SLOTS, PDL=pdl,
        num_warps=config.finish_warps, **pdl_launch_option(pdl),
        **posted_kwargs(posted, cu_seqlens, "angles", "dangles", "dq", "dk", "dadt", "ddt", "dtrap", "dq_bias",
                        "dk_bias", "dd"),
    )
    return grads
