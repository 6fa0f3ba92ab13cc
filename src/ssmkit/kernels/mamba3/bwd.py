# Mamba-3 SISO backward (spec §7.1 full VJP, computed chunk-wise as in §7.2), four or five launches:
# 1. the state-gradient chain dS <- e^Lambda dS + (diag(e^l) dY)^T Q~ over each sequence's 64-token chunks in
#    reverse, from dfinal_ssm; stores the gradient of the state leaving every chunk (fp32, the forward's chunk-state
#    layout) and dz. Two forms (Mamba3BwdConfig.dstate_scan):
#    chain: `_m3b_dstate_kernel`, grid (H, S, 2 column halves), one dot per chunk on the serial path;
#    scan: `_m3b_dstate_local_kernel`, grid (chunk slots, H), the per-chunk term (one 64x64x128 dot) in parallel,
#    then `_m3b_dstate_scan_kernel`, grid (64*128 / BLOCK, H, S), an elementwise reverse scan in place.
# 2. `_m3b_chunk_kernel`, grid (T//64 + S chunk slots, H): everything that stays inside one chunk of one head:
#    14 (64x64)x(64x64) fp32 dots (tf32 by default), dv, dadt, per-head dq_hat/dk_hat rows, dPhi, ds, dgamma and
#    per-slot partial sums for q_bias, k_bias, D. The 128 state dims are handled as two 64-wide halves in turn.
# 3. `_m3b_angle_kernel`, grid (chunk slots, H): the terms that cross chunk edges, per chunk: reverse cumsum of dPhi
#    (+ dfinal_angle + the later chunks' dPhi sums) -> dangles and the angle part of ddt; the shifted-gamma term
#    (ds of the token before) -> ddt, dtrap.
# 4. `_m3b_reduce_kernel`, grid (ceil(T/2) + H,): GQA sum of dq_hat/dk_hat over the 32 heads; bias/D sums per head.
# No atomics: every sum has a fixed order, so repeated calls are bit-identical.
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from ssmkit.kernels.mamba3.fwd import _fwd_chunk_scalars, _fwd_locate_chunk, _fwd_rotate_pairs
from ssmkit.mamba3.shapes import CHUNK

_REDUCE_TOKENS = 2  # (32, 2, 128) fp32 tile per tensor: 32 registers a thread at 8 warps
_REDUCE_SLOTS = 64
_ANGLE_SLOTS = 16  # later chunks' dPhi sums per tile in the angle kernel


@triton.jit
def _m3b_tanh(x):
    """tanh in fp32 through exp of a non-positive argument (no overflow)."""
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -t, t)


@triton.jit
def _m3b_qk_half(x_ptr, b_ptr, phi_ptr, tok, vmask, h, half: tl.constexpr,
                 C: tl.constexpr, H: tl.constexpr, N: tl.constexpr, NA: tl.constexpr):
    """Biased, rotated q or k (F3, F4) on the dims [half*64, half*64 + 64) of a chunk: (C, 64) fp32, zero on
    invalid rows. Half 0 holds the 32 rotated pairs, half 1 passes through. The rotation reads each dim's pair
    partner from memory (dim ^ 1), so no register shuffle feeds the dots (Triton 3.6 fails to compile a dot operand
    made by reshape/join)."""
    cols = half * (N // 2) + tl.arange(0, N // 2)
    x = tl.load(x_ptr + tok[:, None] * N + cols[None, :], mask=vmask, other=0.0).to(tl.float32)
    x = tl.where(vmask, x + tl.load(b_ptr + h * N + cols)[None, :], 0.0)
    if half == 0:
        cs, sn = _m3b_pair_angles(phi_ptr, tok, vmask, h, True, H, NA)
        swap = cols ^ 1
        xs = tl.load(x_ptr + tok[:, None] * N + swap[None, :], mask=vmask, other=0.0).to(tl.float32)
        xs = tl.where(vmask, xs + tl.load(b_ptr + h * N + swap)[None, :], 0.0)
        x = x * cs + xs * sn
    return x


@triton.jit
def _m3b_pair_angles(phi_ptr, tok, vmask, h, active, H: tl.constexpr, NA: tl.constexpr):
    """cos and signed sin of Phi per rotated dim, (C, 2 NA): x~ = x cos + x_partner sin_signed, the sine taken
    negative on even dims (spec F4); angle 0 (identity) where active is false."""
    cols = tl.arange(0, 2 * NA)
    phi = tl.load(phi_ptr + tok[:, None] * (H * NA) + h * NA + (cols // 2)[None, :], mask=vmask & active, other=0.0)
    return tl.cos(phi), tl.sin(phi) * tl.where(cols % 2 == 0, -1.0, 1.0)[None, :]


@triton.jit
def _m3b_unrotate(g, cs, sn, C: tl.constexpr, NA: tl.constexpr):
    """R(Phi)^T g on the rotated half, (C, 2 NA): dx = g cs - g_partner sn (cs, sn from _m3b_pair_angles)."""
    g0, g1 = tl.split(tl.reshape(g, (C, NA, 2)))
    return g * cs - tl.reshape(tl.join(g1, g0), (C, 2 * NA)) * sn


@triton.jit
def _m3b_dphi(g, xr, C: tl.constexpr, NA: tl.constexpr):
    """dPhi (C, NA) from the gradient g of a rotated vector xr (spec §7.1): g_odd xr_even - g_even xr_odd."""
    g0, g1 = tl.split(tl.reshape(g, (C, NA, 2)))
    x0, x1 = tl.split(tl.reshape(xr, (C, NA, 2)))
    return g1 * x0 - g0 * x1


@triton.jit
def _m3b_gate(dout_ptr, z_ptr, y_ptr, dz_ptr, hp, vmask, write_dz):
    """Gate (F8) of one chunk: returns dY = dout * silu(z) (C, P) fp32 and, where write_dz, stores
    dz = dout * y * silu'(z) (zero-cotangent rows masked by vmask)."""
    dout = tl.load(dout_ptr + hp, mask=vmask, other=0.0).to(tl.float32)
    zz = tl.load(z_ptr + hp, mask=vmask, other=0.0).to(tl.float32)
    sig = tl.sigmoid(zz)
    gate = vmask & write_dz
    yy = tl.load(y_ptr + hp, mask=gate, other=0.0)
    tl.store(dz_ptr + hp, (dout * yy * sig * (1.0 + zz * (1.0 - sig))).to(dz_ptr.dtype.element_ty), mask=gate)
    return dout * zz * sig


@triton.jit
def _m3b_dstate_kernel(
    q_ptr, qb_ptr, adt_ptr, phi_ptr, z_ptr, y_ptr, dout_ptr, cu_ptr, dfs_ptr, dstates_ptr, dz_ptr,
    H: tl.constexpr, P: tl.constexpr, N: tl.constexpr, NA: tl.constexpr, C: tl.constexpr, PREC: tl.constexpr,
):
    """Grid (H, S, 2): the reverse state-gradient chain of §7.2 on one half of the state columns; stores the
    gradient of the state leaving each chunk (dS_acc of that chunk), and dz (gate, F8) from the half-0 programs."""
    h = tl.program_id(0)
    s = tl.program_id(1)
    half = tl.program_id(2)
    NH: tl.constexpr = N // 2
    bos = tl.load(cu_ptr + s)
    eos = tl.load(cu_ptr + s + 1)
    nchunks = tl.cdiv(eos - bos, C)
    base = bos // C + s
    i = tl.arange(0, C)
    pv = tl.arange(0, P)
    cols = half * NH + tl.arange(0, NH)
    tile = pv[:, None] * N + cols[None, :]
    ds = tl.load(dfs_ptr + (s * H + h) * P * N + tile)
    ci = 0
    while ci < nchunks:  # not `for ... in range(nchunks)`: the interpreter (numpy 2) rejects a runtime range bound
        c = nchunks - 1 - ci
        tok = bos + c * C + i
        valid = tok < eos
        vmask = valid[:, None]
        tl.store(dstates_ptr + ((base + c) * H + h) * P * N + tile, ds)
        adt = tl.load(adt_ptr + tok * H + h, mask=valid, other=0.0)
        ell = tl.cumsum(adt, axis=0)
        lam = tl.sum(adt, axis=0)
        hp = tok[:, None] * (H * P) + h * P + pv[None, :]
        dy = _m3b_gate(dout_ptr, z_ptr, y_ptr, dz_ptr, hp, vmask, half == 0)
        if half == 0:
            qt = _m3b_qk_half(q_ptr, qb_ptr, phi_ptr, tok, vmask, h, 0, C, H, N, NA)
        else:
            qt = _m3b_qk_half(q_ptr, qb_ptr, phi_ptr, tok, vmask, h, 1, C, H, N, NA)
        ds = tl.exp(lam) * ds + tl.dot(tl.trans(dy * tl.exp(ell)[:, None]), qt, input_precision=PREC)
        ci += 1


@triton.jit
def _m3b_dstate_local_kernel(
    q_ptr, qb_ptr, adt_ptr, phi_ptr, z_ptr, y_ptr, dout_ptr, cu_ptr, dloc_ptr, dz_ptr, S,
    H: tl.constexpr, P: tl.constexpr, N: tl.constexpr, NA: tl.constexpr, C: tl.constexpr, SB: tl.constexpr,
    PREC: tl.constexpr,
):
    """Grid (chunk slots, H): chunk c's own term of the reverse chain, (diag(e^l) dY)^T Q~ (P, N) fp32, stored at the
    chunk's slot (the scan kernel turns it into the state gradient in place); dz. The first chunk of a sequence
    feeds nothing (the initial state has no gradient), so only its dz is written; unused slots exit."""
    slot = tl.program_id(0)
    h = tl.program_id(1)
    NH: tl.constexpr = N // 2
    s, bos, eos, c = _fwd_locate_chunk(cu_ptr, slot, S, SB, C)
    tok = bos + c * C + tl.arange(0, C)
    valid = tok < eos
    vmask = valid[:, None]
    pv = tl.arange(0, P)
    hp = tok[:, None] * (H * P) + h * P + pv[None, :]
    dy = _m3b_gate(dout_ptr, z_ptr, y_ptr, dz_ptr, hp, vmask, True)
    if (c > 0) & (bos + c * C < eos):
        ell = tl.cumsum(tl.load(adt_ptr + tok * H + h, mask=valid, other=0.0), axis=0)
        w = tl.trans(dy * tl.exp(ell)[:, None])
        row = dloc_ptr + (slot * H + h) * P * N + pv[:, None] * N
        for half in tl.static_range(2):
            qt = _m3b_qk_half(q_ptr, qb_ptr, phi_ptr, tok, vmask, h, half, C, H, N, NA)
            tl.store(row + (half * NH + tl.arange(0, NH))[None, :], tl.dot(w, qt, input_precision=PREC))


@triton.jit
def _m3b_dstate_scan_kernel(adt_ptr, cu_ptr, dfs_ptr, dstates_ptr,
                            H: tl.constexpr, PN: tl.constexpr, C: tl.constexpr, BLOCK: tl.constexpr):
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
    g = tl.load(dfs_ptr + (s * H + h) * PN + e)
    ci = 0
    while ci < nchunks:  # runtime bound: see _m3b_dstate_kernel
        c = nchunks - 1 - ci
        tok = bos + c * C + i
        lam = tl.sum(tl.load(adt_ptr + tok * H + h, mask=tok < eos, other=0.0), axis=0)
        ptr = dstates_ptr + ((base + c) * H + h) * PN + e
        loc = tl.load(ptr, mask=c > 0, other=0.0)  # the first chunk's term is never written (nor needed)
        tl.store(ptr, g)
        g = tl.exp(lam) * g + loc
        ci += 1


@triton.jit
def _m3b_chunk_kernel(
    q_ptr, k_ptr, v_ptr, adt_ptr, dt_ptr, trap_ptr, qb_ptr, kb_ptr, d_ptr, z_ptr, cu_ptr,
    phi_ptr, states_ptr, dstates_ptr, dout_ptr, dfk_ptr, dfv_ptr,
    dv_ptr, dadt_ptr, dqp_ptr, dkp_ptr, dphi_ptr, dphis_ptr, dsg_ptr, dgam_ptr, dqbp_ptr, dkbp_ptr, ddp_ptr,
    S, H: tl.constexpr, P: tl.constexpr, N: tl.constexpr, NA: tl.constexpr, C: tl.constexpr,
    SB: tl.constexpr, PREC: tl.constexpr, SIDES: tl.constexpr,
):
    """Grid (T//64 + S chunk slots, H): one chunk of one head, all of §7.1 that stays inside the chunk (§7.2 with
    the incoming dS_acc read from the dstate kernel). Slots no chunk maps to write zero partials only."""
    slot = tl.program_id(0)
    h = tl.program_id(1)
    NH: tl.constexpr = N // 2
    # slot -> (sequence, chunk): chunk c of sequence s sits at slot cu[s] // C + s + c (the forward's layout)
    sv = tl.arange(0, SB)
    starts = tl.load(cu_ptr + sv, mask=sv < S, other=0) // C + sv
    s = tl.sum(((sv < S) & (starts <= slot)).to(tl.int32), axis=0) - 1
    bos = tl.load(cu_ptr + s)
    eos = tl.load(cu_ptr + s + 1)
    t0 = bos + (slot - bos // C - s) * C
    active = t0 < eos

    i = tl.arange(0, C)
    pv = tl.arange(0, P)
    m = tl.arange(0, NA)
    tok = t0 + i
    valid = (tok < eos) & active
    vmask = valid[:, None]
    is_last = tok == eos - 1
    causal = i[:, None] > i[None, :]

    # per-token scalars (F5, F6)
    th_ = tok * H + h
    dt_c = tl.load(dt_ptr + th_, mask=valid, other=0.0)
    p_c = tl.sigmoid(tl.load(trap_ptr + th_, mask=valid, other=0.0).to(tl.float32))
    gam = dt_c * p_c
    nvalid = valid & ((tok + 1) < eos)
    dt_n = tl.load(dt_ptr + th_ + H, mask=nvalid, other=0.0)
    p_n = tl.sigmoid(tl.load(trap_ptr + th_ + H, mask=nvalid, other=0.0).to(tl.float32))
    sc = gam + dt_n * (1.0 - p_n)
    adt_c = tl.load(adt_ptr + th_, mask=valid, other=0.0)
    ell = tl.cumsum(adt_c, axis=0)
    lam = tl.sum(adt_c, axis=0)
    e_ell = tl.exp(ell)
    e_rev = tl.exp(lam - ell)
    e_lam = tl.exp(lam)

    # gate (F8) and the (C, C) matrices
    hp = tok[:, None] * (H * P) + h * P + pv[None, :]
    dout = tl.load(dout_ptr + hp, mask=vmask, other=0.0).to(tl.float32)
    zz = tl.load(z_ptr + hp, mask=vmask, other=0.0).to(tl.float32)
    dy = dout * zz * tl.sigmoid(zz)
    vv = tl.load(v_ptr + hp, mask=vmask, other=0.0).to(tl.float32)
    e_tok = tl.sum(dy * vv, axis=1)
    decay = tl.where(causal, tl.exp(tl.minimum(ell[:, None] - ell[None, :], 0.0)), 0.0)
    mg = decay * tl.dot(dy, tl.trans(vv), input_precision=PREC)
    # pass 1 over the two state halves: intra-chunk scores A = Q~ Ks^T and q^.k^ (= q~.k~, spec F7)
    am = tl.zeros([C, C], dtype=tl.float32)
    qk = tl.zeros([C], dtype=tl.float32)
    for half in tl.static_range(2):
        qt = _m3b_qk_half(q_ptr, qb_ptr, phi_ptr, tok, vmask, h, half, C, H, N, NA)
        kt = _m3b_qk_half(k_ptr, kb_ptr, phi_ptr, tok, vmask, h, half, C, H, N, NA)
        am += tl.dot(qt, tl.trans(kt * sc[:, None]), input_precision=PREC)
        qk += tl.sum(qt * kt, axis=1)
    ma = decay * am
    mm = mg * am  # decay o A o G
    dl = tl.sum(mm, axis=1) - tl.sum(mm, axis=0)
    dvv = (tl.dot(tl.trans(ma), dy, input_precision=PREC) + (tl.load(d_ptr + h) + gam * qk)[:, None] * dy
           + tl.where(is_last[:, None], tl.load(dfv_ptr + (s * H + h) * P + pv).to(tl.float32)[None, :], 0.0))
    # pass 2: everything that needs the chunk's states, half by half
    dlam = tl.sum(tl.zeros([C], dtype=tl.float32), axis=0)
    ds_tok = tl.zeros([C], dtype=tl.float32)
    ge = (gam * e_tok)[:, None]
    mgt = tl.trans(mg)
    st_row = (slot * H + h) * P * N + pv[:, None] * N
    dphi_q = tl.zeros([C, NA], dtype=tl.float32)
    # SIDES == 1: per half, the q side then the k side; SIDES == 2: the q side of both halves, then the k side of
    # both (q~, k~, dS_out and the rotation tiles re-read; fewer tiles live at once)
    for rnd in tl.static_range(SIDES):
        for half in tl.static_range(2):
            cols = half * NH + tl.arange(0, NH)
            qt = _m3b_qk_half(q_ptr, qb_ptr, phi_ptr, tok, vmask, h, half, C, H, N, NA)
            kt = _m3b_qk_half(k_ptr, kb_ptr, phi_ptr, tok, vmask, h, half, C, H, N, NA)
            ks = kt * sc[:, None]
            hn = tok[:, None] * (H * N) + h * N + cols[None, :]
            part = (slot * H + h) * N + cols
            if rnd == 0:
                # q side: dQ~ = (M o G) Ks + diag(e^l) dY S_in; then the gamma (q^.k^) diagonal path as gamma e k~
                # (rotating it back gives gamma e k^; its dPhi parts from q and k cancel, q~.k~ being rotation-free)
                s_in = tl.load(states_ptr + st_row + cols[None, :], mask=active, other=0.0)  # state entering
                x = tl.dot(dy, s_in, input_precision=PREC)
                dl += e_ell * tl.sum(x * qt, axis=1)
                dqt = tl.dot(mg, ks, input_precision=PREC) + e_ell[:, None] * x + ge * kt
                ds_out = tl.load(dstates_ptr + st_row + cols[None, :], mask=active, other=0.0)  # grad of leaving
                dlam += e_lam * tl.sum(tl.sum(s_in * ds_out, axis=1), axis=0)
                if half == 0:
                    cs, sn = _m3b_pair_angles(phi_ptr, tok, vmask, h, True, H, NA)
                    dphi_q = _m3b_dphi(dqt, qt, C, NA)
                    dqt = _m3b_unrotate(dqt, cs, sn, C, NA)
                tl.store(dqp_ptr + hn, dqt, mask=vmask)
                tl.store(dqbp_ptr + part, tl.sum(dqt, axis=0))
            if rnd == SIDES - 1:
                if SIDES == 2:
                    ds_out = tl.load(dstates_ptr + st_row + cols[None, :], mask=active, other=0.0)
                    if half == 0:
                        cs, sn = _m3b_pair_angles(phi_ptr, tok, vmask, h, True, H, NA)
                # k side: dKs = (M o G)^T Q~ + diag(e^{L-l}) V dS; dk~ = s dKs (+ dfinal_k on the last token)
                vds = tl.dot(vv, ds_out, input_precision=PREC)
                fwd_state = e_rev * tl.sum(vds * ks, axis=1)
                dl -= fwd_state
                dlam += tl.sum(fwd_state, axis=0)
                dvv += e_rev[:, None] * tl.dot(ks, tl.trans(ds_out), input_precision=PREC)
                dks = tl.dot(mgt, qt, input_precision=PREC) + e_rev[:, None] * vds
                ds_tok += tl.sum(dks * kt, axis=1)
                dkt = sc[:, None] * dks + ge * qt + tl.where(is_last[:, None],
                                                             tl.load(dfk_ptr + (s * H + h) * N + cols)[None, :], 0.0)
                if half == 0:
                    dphi = dphi_q + _m3b_dphi(dkt, kt, C, NA)
                    tl.store(dphi_ptr + tok[:, None] * (H * NA) + h * NA + m[None, :], dphi, mask=vmask)
                    tl.store(dphis_ptr + (slot * H + h) * NA + m, tl.sum(tl.where(vmask, dphi, 0.0), axis=0))
                    dkt = _m3b_unrotate(dkt, cs, sn, C, NA)
                tl.store(dkp_ptr + hn, dkt, mask=vmask)
                tl.store(dkbp_ptr + part, tl.sum(dkt, axis=0))

    tl.store(dv_ptr + hp, dvv.to(dv_ptr.dtype.element_ty), mask=vmask)
    tl.store(dadt_ptr + th_, tl.sum(dl, axis=0) - tl.cumsum(dl, axis=0) + dl + dlam, mask=valid)
    tl.store(dsg_ptr + th_, ds_tok, mask=valid)
    tl.store(dgam_ptr + th_, ds_tok + e_tok * qk, mask=valid)
    tl.store(ddp_ptr + slot * H + h, tl.sum(e_tok, axis=0))


@triton.jit
def _m3b_take(x, rows, idx):
    """x[rows] of a (C,) vector x indexed by idx = arange(C): an exact select-and-sum (adds zeros only), so the
    row block sees the same values as the full chunk."""
    return tl.sum(tl.where(rows[:, None] == idx[None, :], x[None, :], 0.0), axis=1)


@triton.jit
def _m3b_qk_block(x_ptr, b_ptr, phi_ptr, tok, vmask, h, nb, ROT: tl.constexpr,
                  H: tl.constexpr, N: tl.constexpr, NA: tl.constexpr, NB: tl.constexpr):
    """Biased, rotated q or k (F3, F4) on the state dims [nb*NB, nb*NB + NB) of the rows tok: (rows, NB) fp32, zero on
    invalid rows. ROT (blocks inside the first 2 NA dims): the adjacent pairs rotate by Phi (split/join on the pairs,
    as the forward); else the block passes through."""
    cols = nb * NB + tl.arange(0, NB)
    x = tl.load(x_ptr + tok[:, None] * N + cols[None, :], mask=vmask, other=0.0).to(tl.float32)
    x = tl.where(vmask, x + tl.load(b_ptr + h * N + cols)[None, :], 0.0)
    if ROT:
        phi = _m3b_phi_block(phi_ptr, tok, vmask, h, nb, H, NA, NB)
        x = _fwd_rotate_pairs(x, tl.cos(phi), tl.sin(phi), tok.shape[0], NB // 2)
    return x


@triton.jit
def _m3b_phi_block(phi_ptr, tok, vmask, h, nb, H: tl.constexpr, NA: tl.constexpr, NB: tl.constexpr):
    """Phi (rows, NB / 2) of the pairs of state block nb (pairs [nb*NB/2, nb*NB/2 + NB/2)), zero on invalid rows."""
    pairs = nb * (NB // 2) + tl.arange(0, NB // 2)
    return tl.load(phi_ptr + tok[:, None] * (H * NA) + h * NA + pairs[None, :], mask=vmask, other=0.0)


@triton.jit
def _m3b_take(x, rows, idx):
    """x[rows] of a (C,) vector x indexed by idx = arange(C): an exact select-and-sum (adds zeros only), so the
    row block sees the same values as the full chunk."""
    return tl.sum(tl.where(rows[:, None] == idx[None, :], x[None, :], 0.0), axis=1)


@triton.jit
def _m3b_rows_mg(dout_ptr, z_ptr, v_ptr, hp, hpb, vm, vb, i, ib, ell, ell_b, PREC: tl.constexpr):
    """dY (BR, P) of the block's rows (gate, F8) and the row block (BR, C) of M o G = decay o (dY V^T)."""
    dout = tl.load(dout_ptr + hpb, mask=vb, other=0.0).to(tl.float32)
    zz = tl.load(z_ptr + hpb, mask=vb, other=0.0).to(tl.float32)
    dy = dout * zz * tl.sigmoid(zz)
    mg = tl.where(ib[:, None] > i[None, :], tl.exp(tl.minimum(ell_b[:, None] - ell[None, :], 0.0)), 0.0)
    return dy, mg * tl.dot(dy, tl.trans(tl.load(v_ptr + hp, mask=vm, other=0.0).to(tl.float32)), input_precision=PREC)


@triton.jit
def _m3b_rows_qside(
    q_ptr, k_ptr, qb_ptr, kb_ptr, phi_ptr, states_ptr, dqp_ptr, dqbp_ptr, dphi_ptr, dphis_ptr, nb, ROT: tl.constexpr,
    h, tok, vm, tb, vb, active, dy, mg_r, e_ell, sc_f, ge, st_row, part_row, dl,
    BR: tl.constexpr, H: tl.constexpr, N: tl.constexpr, NA: tl.constexpr, NB: tl.constexpr, PREC: tl.constexpr,
):
    """q side of `_m3b_chunk_rows_kernel` on state block nb (dims [nb*NB, nb*NB + NB)) for the block's rows:
    dQ~ = (M o G) Ks + diag(e^l) dY S_in + gamma e k~ (the q^.k^ diagonal, see _m3b_chunk_kernel); stores dq_hat
    and its bias partial, and on a rotated block (ROT) dPhi (the k side's part, stored before, plus dQ~'s) and its
    column-sum partial. Returns dl."""
    NPB: tl.constexpr = NB // 2  # rotation pairs per state block
    cols = nb * NB + tl.arange(0, NB)
    qt = _m3b_qk_block(q_ptr, qb_ptr, phi_ptr, tb, vb, h, nb, ROT, H, N, NA, NB)
    x = tl.dot(dy, tl.load(states_ptr + st_row + cols[None, :], mask=active, other=0.0), input_precision=PREC)
    dl += e_ell * tl.sum(x * qt, axis=1)
    acc = e_ell[:, None] * x + ge * _m3b_qk_block(k_ptr, kb_ptr, phi_ptr, tb, vb, h, nb, ROT, H, N, NA, NB)
    dqt = tl.dot(mg_r, _m3b_qk_block(k_ptr, kb_ptr, phi_ptr, tok, vm, h, nb, ROT, H, N, NA, NB) * sc_f[:, None],
                 acc, input_precision=PREC)
    if ROT:  # dPhi (adding the k side's part), its column-sum partial, then R(Phi)^T back to q^
        pairs = nb * NPB + tl.arange(0, NPB)
        dphi_ptrs = dphi_ptr + tb[:, None] * (H * NA) + h * NA + pairs[None, :]
        dphi = tl.load(dphi_ptrs, mask=vb, other=0.0) + _m3b_dphi(dqt, qt, BR, NPB)
        tl.store(dphi_ptrs, dphi, mask=vb)
        tl.store(dphis_ptr + part_row * NA + pairs, tl.sum(tl.where(vb, dphi, 0.0), axis=0))
        phi = _m3b_phi_block(phi_ptr, tb, vb, h, nb, H, NA, NB)
        dqt = _fwd_rotate_pairs(dqt, tl.cos(phi), -tl.sin(phi), BR, NPB)
    tl.store(dqp_ptr + tb[:, None] * (H * N) + h * N + cols[None, :], dqt, mask=vb)
    tl.store(dqbp_ptr + part_row * N + cols, tl.sum(dqt, axis=0))
    return dl


@triton.jit
def _m3b_rows_kside(
    q_ptr, k_ptr, qb_ptr, kb_ptr, phi_ptr, states_ptr, dstates_ptr, dfk_ptr, dkp_ptr, dkbp_ptr, dphi_ptr, dphis_ptr,
    nb, ROT: tl.constexpr, h, s, r, tok, vm, tb, vb, active, is_last, vv, mg_c, e_rev, e_lam, sc, ge, st_row,
    part_row, dl, dlam, ds_tok,
    BR: tl.constexpr, H: tl.constexpr, N: tl.constexpr, NA: tl.constexpr, NB: tl.constexpr, PREC: tl.constexpr,
):
    """k side of `_m3b_chunk_rows_kernel` on state block nb for the block's columns: dKs = (M o G)^T Q~ +
    diag(e^{L-l}) V dS_out, dk~ = s dKs + gamma e q~ (+ dfinal_k on the last token), ds, dLambda (its <S_in, dS_out>
    part on the blocks of parity r);
    stores dk_hat and its bias partial, on a rotated block (ROT) dk~'s part of dPhi (the q side adds its own).
    Returns the updated (dl, dlam, ds)."""
    NPB: tl.constexpr = NB // 2
    cols = nb * NB + tl.arange(0, NB)
    kt = _m3b_qk_block(k_ptr, kb_ptr, phi_ptr, tb, vb, h, nb, ROT, H, N, NA, NB)
    ks = kt * sc[:, None]
    ds_ptrs = dstates_ptr + st_row + cols[None, :]  # gradient of the state leaving the chunk, (P, NB)
    vds = tl.dot(vv, tl.load(ds_ptrs, mask=active, other=0.0), input_precision=PREC)
    fwd_state = e_rev * tl.sum(vds * ks, axis=1)
    dl -= fwd_state
    dlam += tl.sum(fwd_state, axis=0)
    s_in = tl.load(states_ptr + st_row + cols[None, :], mask=active & (r == nb % 2), other=0.0)
    dlam += e_lam * tl.sum(tl.sum(s_in * tl.load(ds_ptrs, mask=active, other=0.0), axis=1), axis=0)  # <S_in, dS_out>
    dks = tl.dot(tl.trans(mg_c), _m3b_qk_block(q_ptr, qb_ptr, phi_ptr, tok, vm, h, nb, ROT, H, N, NA, NB),
                 e_rev[:, None] * vds, input_precision=PREC)
    ds_tok += tl.sum(dks * kt, axis=1)
    dkt = (sc[:, None] * dks + ge * _m3b_qk_block(q_ptr, qb_ptr, phi_ptr, tb, vb, h, nb, ROT, H, N, NA, NB)
           + tl.where(is_last[:, None], tl.load(dfk_ptr + (s * H + h) * N + cols)[None, :], 0.0))
    if ROT:  # dPhi (k part; the q side adds its own), then R(Phi)^T back to k^
        pairs = nb * NPB + tl.arange(0, NPB)
        tl.store(dphi_ptr + tb[:, None] * (H * NA) + h * NA + pairs[None, :], _m3b_dphi(dkt, kt, BR, NPB), mask=vb)
        phi = _m3b_phi_block(phi_ptr, tb, vb, h, nb, H, NA, NB)
        dkt = _fwd_rotate_pairs(dkt, tl.cos(phi), -tl.sin(phi), BR, NPB)
    tl.store(dkp_ptr + tb[:, None] * (H * N) + h * N + cols[None, :], dkt, mask=vb)
    tl.store(dkbp_ptr + part_row * N + cols, tl.sum(dkt, axis=0))
    return dl, dlam, ds_tok


@triton.jit
def _m3b_rows_vstate(k_ptr, kb_ptr, phi_ptr, dstates_ptr, nb, ROT: tl.constexpr, h, tb, vb, active, e_rev, sc, st_row,
                     dvv, H: tl.constexpr, N: tl.constexpr, NA: tl.constexpr, NB: tl.constexpr, PREC: tl.constexpr):
    """dV's state term on state block nb for the block's rows: dvv + diag(e^{L-l}) Ks dS_out^T (its own loop: inside
    the k side's, the extra accumulator made the k side spill)."""
    ks = _m3b_qk_block(k_ptr, kb_ptr, phi_ptr, tb, vb, h, nb, ROT, H, N, NA, NB) * (e_rev * sc)[:, None]
    ds_out = tl.load(dstates_ptr + st_row + (nb * NB + tl.arange(0, NB))[None, :], mask=active, other=0.0)
    return tl.dot(ks, tl.trans(ds_out), dvv, input_precision=PREC)


@triton.jit
def _m3b_chunk_rows_kernel(
    q_ptr, k_ptr, v_ptr, adt_ptr, dt_ptr, trap_ptr, qb_ptr, kb_ptr, d_ptr, z_ptr, cu_ptr,
    phi_ptr, states_ptr, dstates_ptr, dout_ptr, dfk_ptr, dfv_ptr,
    dv_ptr, dl_ptr, dlam_ptr, dqp_ptr, dkp_ptr, dphi_ptr, dphis_ptr, dsg_ptr, dgam_ptr, dqbp_ptr, dkbp_ptr, ddp_ptr,
    S, H: tl.constexpr, P: tl.constexpr, N: tl.constexpr, NA: tl.constexpr, C: tl.constexpr,
    SB: tl.constexpr, NB: tl.constexpr, PREC: tl.constexpr,
):
    """Grid (T//64 + S chunk slots, H, 2): §7.2 for one chunk of one head, restricted to the tokens of row block
    r = program_id(2) (tokens [32 r, 32 r + 32) of the chunk): the dQ~ side uses the row block of M o G (and of A for
    dl), the dKs / dV side the column block; each program recomputes the (32 x 64) pieces it needs, so no (C, C)
    tile is held, and walks the 128 state dims in blocks of NB (rotation per block, nothing held across blocks but
    the (32 x 64) row/column pieces, dv and per-token sums). Writes dv, dq_hat/dk_hat (per head), dPhi, ds, dgamma
    of its tokens; dl per token and its part of the chunk's dLambda (the angle kernel forms dadt = reverse in-chunk
    cumsum of dl + dLambda); per (slot, row block) partials of the bias/D sums and of the dPhi column sums. Slots no
    chunk maps to write zero partials only."""
    slot = tl.program_id(0)
    h = tl.program_id(1)
    r = tl.program_id(2)
    BR: tl.constexpr = C // 2
    s, bos, eos, c = _fwd_locate_chunk(cu_ptr, slot, S, SB, C)
    t0 = bos + c * C
    active = t0 < eos
    i = tl.arange(0, C)
    ib = r * BR + tl.arange(0, BR)  # the block's rows, chunk-local
    pv = tl.arange(0, P)
    tok = t0 + i
    tb = t0 + ib
    vm = ((tok < eos) & active)[:, None]
    valid_b = (tb < eos) & active
    vb = valid_b[:, None]
    is_last = tb == eos - 1

    # per-token scalars (F5, F6) of the chunk, and of the block taken from them
    ell, gam_f, sc_f, _ = _fwd_chunk_scalars(adt_ptr, dt_ptr, trap_ptr, tok, h, eos, H)
    lam = tl.sum(tl.where(i == C - 1, ell, 0.0), axis=0)
    ell_b = _m3b_take(ell, ib, i)
    gam = _m3b_take(gam_f, ib, i)
    sc = _m3b_take(sc_f, ib, i)
    e_ell = tl.exp(ell_b)
    e_rev = tl.exp(lam - ell_b)
    e_lam = tl.exp(lam)

    # pass 1 over the state blocks: A = Q~ Ks^T as row block (BR, C) and column block (C, BR); q^.k^ (= q~.k~, F7)
    a_r = tl.zeros([BR, C], dtype=tl.float32)
    a_c = tl.zeros([C, BR], dtype=tl.float32)
    qk = tl.zeros([BR], dtype=tl.float32)
    for nb in tl.static_range(N // NB):
        qt = _m3b_qk_block(q_ptr, qb_ptr, phi_ptr, tb, vb, h, nb, nb * NB < 2 * NA, H, N, NA, NB)
        kt = _m3b_qk_block(k_ptr, kb_ptr, phi_ptr, tb, vb, h, nb, nb * NB < 2 * NA, H, N, NA, NB)
        qk += tl.sum(qt * kt, axis=1)
        a_c = tl.dot(_m3b_qk_block(q_ptr, qb_ptr, phi_ptr, tok, vm, h, nb, nb * NB < 2 * NA, H, N, NA, NB),
                     tl.trans(kt * sc[:, None]), a_c, input_precision=PREC)
        a_r = tl.dot(qt, tl.trans(_m3b_qk_block(k_ptr, kb_ptr, phi_ptr, tok, vm, h, nb, nb * NB < 2 * NA, H, N, NA, NB)
                                  * sc_f[:, None]), a_r, input_precision=PREC)

    # gate (F8); M o G (decay o dY V^T) as row and column block; dl's M sums; dV's (decay o A)^T dY term
    hp = tok[:, None] * (H * P) + h * P + pv[None, :]
    hpb = tb[:, None] * (H * P) + h * P + pv[None, :]
    dy, mg_r = _m3b_rows_mg(dout_ptr, z_ptr, v_ptr, hp, hpb, vm, vb, i, ib, ell, ell_b, PREC)
    dl = tl.sum(mg_r * a_r, axis=1)
    vv = tl.load(v_ptr + hpb, mask=vb, other=0.0).to(tl.float32)
    e_tok = tl.sum(dy * vv, axis=1)
    dvv = ((tl.load(d_ptr + h) + gam * qk)[:, None] * dy
           + tl.where(is_last[:, None], tl.load(dfv_ptr + (s * H + h) * P + pv).to(tl.float32)[None, :], 0.0))
    dec_c = tl.where(i[:, None] > ib[None, :], tl.exp(tl.minimum(ell[:, None] - ell_b[None, :], 0.0)), 0.0)
    dout = tl.load(dout_ptr + hp, mask=vm, other=0.0).to(tl.float32)
    zz = tl.load(z_ptr + hp, mask=vm, other=0.0).to(tl.float32)
    dy_f = dout * zz * tl.sigmoid(zz)
    mg_c = dec_c * tl.dot(dy_f, tl.trans(vv), input_precision=PREC)
    dl -= tl.sum(mg_c * a_c, axis=0)
    dvv = tl.dot(tl.trans(dec_c * a_c), dy_f, dvv, input_precision=PREC)

    # pass 2 over the state blocks: the k side (dKs, V dS of the block's columns) of all blocks, then dv is final;
    # then the q side (dQ~ of its rows) with M o G's row block recomputed (not held through the k side). Runtime
    # loops: unrolled, the compiler hoists the blocks' loads together and spills. The q side adds its dPhi part to
    # the k side's in memory (same program; the barrier orders those global stores and loads across its threads).
    dlam = tl.sum(tl.zeros([BR], dtype=tl.float32), axis=0)
    ds_tok = tl.zeros([BR], dtype=tl.float32)
    ge = (gam * e_tok)[:, None]
    st_row = (slot * H + h) * P * N + pv[:, None] * N
    part_row = (slot * 2 + r) * H + h
    for nb in range(0, 2 * NA // NB):
        dl, dlam, ds_tok = _m3b_rows_kside(
            q_ptr, k_ptr, qb_ptr, kb_ptr, phi_ptr, states_ptr, dstates_ptr, dfk_ptr, dkp_ptr, dkbp_ptr, dphi_ptr,
            dphis_ptr, nb, True, h, s, r, tok, vm, tb, vb, active, is_last, vv, mg_c, e_rev, e_lam, sc, ge, st_row,
            part_row, dl, dlam, ds_tok, BR, H, N, NA, NB, PREC)
    for nb in range(2 * NA // NB, N // NB):
        dl, dlam, ds_tok = _m3b_rows_kside(
            q_ptr, k_ptr, qb_ptr, kb_ptr, phi_ptr, states_ptr, dstates_ptr, dfk_ptr, dkp_ptr, dkbp_ptr, dphi_ptr,
            dphis_ptr, nb, False, h, s, r, tok, vm, tb, vb, active, is_last, vv, mg_c, e_rev, e_lam, sc, ge, st_row,
            part_row, dl, dlam, ds_tok, BR, H, N, NA, NB, PREC)
    for nb in range(0, 2 * NA // NB):
        dvv = _m3b_rows_vstate(k_ptr, kb_ptr, phi_ptr, dstates_ptr, nb, True, h, tb, vb, active, e_rev, sc, st_row, dvv,
                               H, N, NA, NB, PREC)
    for nb in range(2 * NA // NB, N // NB):
        dvv = _m3b_rows_vstate(k_ptr, kb_ptr, phi_ptr, dstates_ptr, nb, False, h, tb, vb, active, e_rev, sc, st_row,
                               dvv, H, N, NA, NB, PREC)
    tl.store(dv_ptr + hpb, dvv.to(dv_ptr.dtype.element_ty), mask=vb)
    dy, mg_r = _m3b_rows_mg(dout_ptr, z_ptr, v_ptr, hp, hpb, vm, vb, i, ib, ell, ell_b, PREC)
    tl.debug_barrier()
    for nb in range(0, 2 * NA // NB):
        dl = _m3b_rows_qside(q_ptr, k_ptr, qb_ptr, kb_ptr, phi_ptr, states_ptr, dqp_ptr, dqbp_ptr, dphi_ptr,
                             dphis_ptr, nb, True, h, tok, vm, tb, vb, active, dy, mg_r, e_ell, sc_f, ge, st_row,
                             part_row, dl, BR, H, N, NA, NB, PREC)
    for nb in range(2 * NA // NB, N // NB):
        dl = _m3b_rows_qside(q_ptr, k_ptr, qb_ptr, kb_ptr, phi_ptr, states_ptr, dqp_ptr, dqbp_ptr, dphi_ptr,
                             dphis_ptr, nb, False, h, tok, vm, tb, vb, active, dy, mg_r, e_ell, sc_f, ge, st_row,
                             part_row, dl, BR, H, N, NA, NB, PREC)

    th_ = tb * H + h
    tl.store(dl_ptr + th_, dl, mask=valid_b)
    tl.store(dlam_ptr + part_row, dlam)
    tl.store(dsg_ptr + th_, ds_tok, mask=valid_b)
    tl.store(dgam_ptr + th_, ds_tok + e_tok * qk, mask=valid_b)
    tl.store(ddp_ptr + part_row, tl.sum(e_tok, axis=0))


@triton.jit
def _m3b_halves_side(
    q_ptr, k_ptr, qb_ptr, kb_ptr, phi_ptr, states_ptr, dstates_ptr, dfk_ptr, dqp_ptr, dkp_ptr, dphi_ptr, dphis_ptr,
    dqbp_ptr, dkbp_ptr, hf: tl.constexpr, slot, h, s, tok, vmask, active, is_last, dy, vv, mg, e_ell, e_rev, e_lam,
    sc, ge, dl, H: tl.constexpr, P: tl.constexpr, N: tl.constexpr, NA: tl.constexpr, PREC: tl.constexpr,
):
    """Pass 2 of `_m3b_chunk_halves_kernel` on state half hf (dims [hf*64, hf*64 + 64); half 0 is the rotated one):
    q side dQ~ = (M o G) Ks + diag(e^l) dY S_in + gamma e k~, k side dKs = (M o G)^T Q~ + diag(e^{L-l}) V dS_out,
    dk~ = s dKs + gamma e q~ (+ dfinal_k); stores dq_hat/dk_hat of the half and their bias partials, and on half 0
    dPhi and its column sums. Returns this half's (dl, dLambda, ds) parts."""
    NH: tl.constexpr = N // 2
    ROT: tl.constexpr = hf == 0
    cols = hf * NH + tl.arange(0, NH)
    pv = tl.arange(0, P)
    st = (slot * H + h) * P * N + pv[:, None] * N + cols[None, :]
    qt = _m3b_qk_half(q_ptr, qb_ptr, phi_ptr, tok, vmask, h, hf, tok.shape[0], H, N, NA)
    kt = _m3b_qk_half(k_ptr, kb_ptr, phi_ptr, tok, vmask, h, hf, tok.shape[0], H, N, NA)
    hn = tok[:, None] * (H * N) + h * N + cols[None, :]
    if ROT:
        phi = _m3b_phi_block(phi_ptr, tok, vmask, h, 0, H, NA, NH)
        m = tl.arange(0, NA)
    # q side (stored before the k side starts, to keep fewer tiles live)
    x = tl.dot(dy, tl.load(states_ptr + st, mask=active, other=0.0), input_precision=PREC)  # S_in: entering state
    dl += e_ell * tl.sum(x * qt, axis=1)
    dqt = tl.dot(mg, kt * sc[:, None], e_ell[:, None] * x + ge * kt, input_precision=PREC)
    if ROT:  # dPhi's q part, then R(Phi)^T back to q^
        dphi = _m3b_dphi(dqt, qt, tok.shape[0], NA)
        dqt = _fwd_rotate_pairs(dqt, tl.cos(phi), -tl.sin(phi), tok.shape[0], NA)
    tl.store(dqp_ptr + hn, dqt, mask=vmask)
    tl.store(dqbp_ptr + (slot * H + h) * N + cols, tl.sum(dqt, axis=0))
    # k side
    ds_out = tl.load(dstates_ptr + st, mask=active, other=0.0)  # gradient of the state leaving the chunk
    dlam = e_lam * tl.sum(tl.sum(tl.load(states_ptr + st, mask=active, other=0.0) * ds_out, axis=1), axis=0)
    vds = tl.dot(vv, ds_out, input_precision=PREC)
    fwd_state = e_rev * tl.sum(vds * kt, axis=1) * sc
    dl -= fwd_state
    dlam += tl.sum(fwd_state, axis=0)
    dks = tl.dot(tl.trans(mg), qt, e_rev[:, None] * vds, input_precision=PREC)
    ds_tok = tl.sum(dks * kt, axis=1)
    dkt = sc[:, None] * dks + ge * qt + tl.where(is_last[:, None], tl.load(dfk_ptr + (s * H + h) * N + cols)[None, :],
                                                 0.0)
    if ROT:  # dPhi, then R(Phi)^T back to k^
        dphi += _m3b_dphi(dkt, kt, tok.shape[0], NA)
        tl.store(dphi_ptr + tok[:, None] * (H * NA) + h * NA + m[None, :], dphi, mask=vmask)
        tl.store(dphis_ptr + (slot * H + h) * NA + m, tl.sum(tl.where(vmask, dphi, 0.0), axis=0))
        dkt = _fwd_rotate_pairs(dkt, tl.cos(phi), -tl.sin(phi), tok.shape[0], NA)
    tl.store(dkp_ptr + hn, dkt, mask=vmask)
    tl.store(dkbp_ptr + (slot * H + h) * N + cols, tl.sum(dkt, axis=0))
    return dl, dlam, ds_tok


@triton.jit
def _m3b_chunk_halves_kernel(
    q_ptr, k_ptr, v_ptr, adt_ptr, dt_ptr, trap_ptr, qb_ptr, kb_ptr, d_ptr, z_ptr, cu_ptr,
    phi_ptr, states_ptr, dstates_ptr, dout_ptr, dfk_ptr, dfv_ptr,
    dv_ptr, dl_ptr, dlam_ptr, dqp_ptr, dkp_ptr, dphi_ptr, dphis_ptr, dsg_ptr, dgam_ptr, dqbp_ptr, dkbp_ptr, ddp_ptr,
    S, T, H: tl.constexpr, P: tl.constexpr, N: tl.constexpr, NA: tl.constexpr, C: tl.constexpr,
    SB: tl.constexpr, PREC: tl.constexpr,
):
    """Grid (T//64 + S chunk slots, H, 2): §7.2 for one chunk of one head, split over the two 64-wide state halves
    hf = program_id(2) (half 0 rotated, half 1 pass-through), so every dot keeps 64 rows (wgmma) and each program
    holds one half's tiles. Both programs form A = Q~ Ks^T and M o G in full (pass 1); program hf writes dv's
    columns [32 hf, 32 hf + 32) and the q/k-side results of its state half (dq_hat/dk_hat columns, bias partials,
    dPhi on half 0). dl, dLambda, ds and dgamma are per-half partials ((2, T, H), (slots, 2, H)) that the angle
    kernel sums in a fixed order (and forms dadt); the chunk's M sums of dl and dgamma's e q^.k^ term go to half 0."""
    slot = tl.program_id(0)
    h = tl.program_id(1)
    hf = tl.program_id(2)
    NH: tl.constexpr = N // 2
    PH: tl.constexpr = P // 2
    # (q~, k~ as dot operands come from _m3b_qk_half's partner loads: Triton 3.6 aborts on split/join-rotated dot
    # operands of 64-row tiles, "Illegal shared layout"; split/join only rotates the stored gradients)
    s, bos, eos, c = _fwd_locate_chunk(cu_ptr, slot, S, SB, C)
    t0 = bos + c * C
    active = t0 < eos
    i = tl.arange(0, C)
    pv = tl.arange(0, P)
    tok = t0 + i
    valid = (tok < eos) & active
    vmask = valid[:, None]
    is_last = tok == eos - 1
    ell, gam, sc, _ = _fwd_chunk_scalars(adt_ptr, dt_ptr, trap_ptr, tok, h, eos, H)
    lam = tl.sum(tl.where(i == C - 1, ell, 0.0), axis=0)
    e_ell = tl.exp(ell)
    e_rev = tl.exp(lam - ell)
    e_lam = tl.exp(lam)

    # pass 1 over both state halves (first, so that little else is live): A = Q~ Ks^T, q^.k^ (= q~.k~, F7), and
    # dV's state term Ks dS_out^T on the program's P half
    pc = hf * PH + tl.arange(0, PH)
    ds_rows = dstates_ptr + (slot * H + h) * P * N + pc[:, None] * N
    am = tl.zeros([C, C], dtype=tl.float32)
    qk = tl.zeros([C], dtype=tl.float32)
    dv_state = tl.zeros([C, PH], dtype=tl.float32)
    for half in tl.static_range(2):
        qt = _m3b_qk_half(q_ptr, qb_ptr, phi_ptr, tok, vmask, h, half, C, H, N, NA)
        kt = _m3b_qk_half(k_ptr, kb_ptr, phi_ptr, tok, vmask, h, half, C, H, N, NA)
        ks = kt * sc[:, None]
        am = tl.dot(qt, tl.trans(ks), am, input_precision=PREC)
        qk += tl.sum(qt * kt, axis=1)
        ds_h = tl.load(ds_rows + (half * NH + tl.arange(0, NH))[None, :], mask=active, other=0.0)
        dv_state = tl.dot(ks, tl.trans(ds_h), dv_state, input_precision=PREC)
    # gate (F8) and M o G = decay o (dY V^T)
    hp = tok[:, None] * (H * P) + h * P + pv[None, :]
    dout = tl.load(dout_ptr + hp, mask=vmask, other=0.0).to(tl.float32)
    zz = tl.load(z_ptr + hp, mask=vmask, other=0.0).to(tl.float32)
    dy = dout * zz * tl.sigmoid(zz)
    vv = tl.load(v_ptr + hp, mask=vmask, other=0.0).to(tl.float32)
    e_tok = tl.sum(dy * vv, axis=1)
    decay = tl.where(i[:, None] > i[None, :], tl.exp(tl.minimum(ell[:, None] - ell[None, :], 0.0)), 0.0)
    mg = decay * tl.dot(dy, tl.trans(vv), input_precision=PREC)
    mm = mg * am  # decay o A o G
    dl = tl.where(hf == 0, tl.sum(mm, axis=1) - tl.sum(mm, axis=0), 0.0)
    am *= decay  # decay o A
    hpc = tok[:, None] * (H * P) + h * P + pc[None, :]
    dout = tl.load(dout_ptr + hpc, mask=vmask, other=0.0).to(tl.float32)
    zz = tl.load(z_ptr + hpc, mask=vmask, other=0.0).to(tl.float32)
    dy_c = dout * zz * tl.sigmoid(zz)
    dvv = (tl.dot(tl.trans(am), dy_c, input_precision=PREC) + (tl.load(d_ptr + h) + gam * qk)[:, None] * dy_c
           + e_rev[:, None] * dv_state
           + tl.where(is_last[:, None], tl.load(dfv_ptr + (s * H + h) * P + pc).to(tl.float32)[None, :], 0.0))
    tl.store(dv_ptr + hpc, dvv.to(dv_ptr.dtype.element_ty), mask=vmask)

    # pass 2 on the program's state half
    ge = (gam * e_tok)[:, None]
    if hf == 0:
        dl, dlam, ds_tok = _m3b_halves_side(
            q_ptr, k_ptr, qb_ptr, kb_ptr, phi_ptr, states_ptr, dstates_ptr, dfk_ptr, dqp_ptr, dkp_ptr, dphi_ptr,
            dphis_ptr, dqbp_ptr, dkbp_ptr, 0, slot, h, s, tok, vmask, active, is_last, dy, vv, mg, e_ell, e_rev,
            e_lam, sc, ge, dl, H, P, N, NA, PREC)
        ds_tok_g = ds_tok + e_tok * qk
    else:
        dl, dlam, ds_tok = _m3b_halves_side(
            q_ptr, k_ptr, qb_ptr, kb_ptr, phi_ptr, states_ptr, dstates_ptr, dfk_ptr, dqp_ptr, dkp_ptr, dphi_ptr,
            dphis_ptr, dqbp_ptr, dkbp_ptr, 1, slot, h, s, tok, vmask, active, is_last, dy, vv, mg, e_ell, e_rev,
            e_lam, sc, ge, dl, H, P, N, NA, PREC)
        ds_tok_g = ds_tok
    th_ = (hf * T + tok) * H + h  # (2, T, H) partials
    tl.store(dl_ptr + th_, dl, mask=valid)
    tl.store(dsg_ptr + th_, ds_tok, mask=valid)
    tl.store(dgam_ptr + th_, ds_tok_g, mask=valid)
    tl.store(dlam_ptr + (slot * 2 + hf) * H + h, dlam)
    tl.store(ddp_ptr + slot * H + h, tl.sum(e_tok, axis=0), mask=hf == 0)


@triton.jit
def _m3b_parts(ptr, off, mask, T, H: tl.constexpr, NPART: tl.constexpr):
    """Sum of the NPART per-token partials at ptr + off (partial j at ptr + j*T*H + off), in partial order."""
    x = tl.load(ptr + off, mask=mask, other=0.0)
    for j in tl.static_range(1, NPART):
        x += tl.load(ptr + j * T * H + off, mask=mask, other=0.0)
    return x


@triton.jit
def _m3b_angle_kernel(
    dt_ptr, trap_ptr, ang_ptr, cu_ptr, dfa_ptr, dphi_ptr, dphis_ptr, dsg_ptr, dgam_ptr, ddt_ptr, dtrap_ptr, dang_ptr,
    dl_ptr, dlam_ptr, dadt_ptr,
    S, T, H: tl.constexpr, NA: tl.constexpr, C: tl.constexpr, SB: tl.constexpr, CB: tl.constexpr, RB: tl.constexpr,
    DADT: tl.constexpr, NPART: tl.constexpr,
):
    """Grid (chunk slots, H): the terms that cross chunk edges, for one chunk. The reverse cumsum of dPhi plus
    dfinal_angle (-> dangles, the angle part of ddt; F1, F2) starts from dfinal_angle plus the per-chunk dPhi sums
    of the sequence's later chunks (CB slots per tile, fixed order; RB partials per slot, (slots, RB, H, NA)); the
    shifted-gamma term gamma'_{t-1} = dt_t (1 - p_t) (-> ddt, dtrap; F5) reads ds of the token before (none for the
    sequence's first token). DADT (the two-program chunk bodies): also dadt = reverse in-chunk cumsum of dl plus the
    chunk's dLambda (two partials per slot, (slots, 2, H)); else dl_ptr, dlam_ptr, dadt_ptr are unused. NPART: ds,
    dgamma and dl come as that many (T, H) partials (the state-half body: 2), summed in order."""
    slot = tl.program_id(0)
    h = tl.program_id(1)
    PI: tl.constexpr = 3.141592653589793
    s, bos, eos, c = _fwd_locate_chunk(cu_ptr, slot, S, SB, C)
    t0 = bos + c * C
    if t0 < eos:
        nchunks = tl.cdiv(eos - bos, C)
        i = tl.arange(0, C)
        m = tl.arange(0, NA)
        g_carry = tl.load(dfa_ptr + (s * H + h) * NA + m)
        later = tl.arange(0, CB)
        c0 = c + 1
        while c0 < nchunks:  # runtime bound: see _m3b_dstate_kernel
            cc = c0 + later
            for rb in tl.static_range(RB):
                blk = tl.load(dphis_ptr + (((slot - c + cc) * RB + rb) * H + h)[:, None] * NA + m[None, :],
                              mask=(cc < nchunks)[:, None], other=0.0)
                g_carry += tl.sum(blk, axis=0)
            c0 += CB
        tok = t0 + i
        valid = tok < eos
        th_ = tok * H + h
        hna = tok[:, None] * (H * NA) + h * NA + m[None, :]
        dphi = tl.load(dphi_ptr + hna, mask=valid[:, None], other=0.0)
        gphi = g_carry[None, :] + tl.sum(dphi, axis=0)[None, :] - tl.cumsum(dphi, axis=0) + dphi
        dt_c = tl.load(dt_ptr + th_, mask=valid, other=0.0)
        p_c = tl.sigmoid(tl.load(trap_ptr + th_, mask=valid, other=0.0).to(tl.float32))
        th = _m3b_tanh(tl.load(ang_ptr + hna, mask=valid[:, None], other=0.0).to(tl.float32))
        tl.store(dang_ptr + hna, (gphi * dt_c[:, None] * PI * (1.0 - th * th)).to(dang_ptr.dtype.element_ty),
                 mask=valid[:, None])
        dgam = _m3b_parts(dgam_ptr, th_, valid, T, H, NPART)
        ds_prev = _m3b_parts(dsg_ptr, th_ - H, valid & (tok > bos), T, H, NPART)
        tl.store(ddt_ptr + th_, dgam * p_c + tl.sum(gphi * PI * th, axis=1) + ds_prev * (1.0 - p_c), mask=valid)
        tl.store(dtrap_ptr + th_, ((dt_c * dgam - dt_c * ds_prev) * p_c * (1.0 - p_c)).to(dtrap_ptr.dtype.element_ty),
                 mask=valid)
        if DADT:
            dl = _m3b_parts(dl_ptr, th_, valid, T, H, NPART)
            dlam = tl.load(dlam_ptr + (slot * 2) * H + h) + tl.load(dlam_ptr + (slot * 2 + 1) * H + h)
            tl.store(dadt_ptr + th_, tl.sum(dl, axis=0) - tl.cumsum(dl, axis=0) + dl + dlam, mask=valid)


@triton.jit
def _m3b_reduce_kernel(
    dqp_ptr, dkp_ptr, dq_ptr, dk_ptr, dqbp_ptr, dkbp_ptr, ddp_ptr, dqb_ptr, dkb_ptr, dd_ptr,
    T, NSLOT,
    H: tl.constexpr, N: tl.constexpr, BT: tl.constexpr, BS: tl.constexpr,
):
    """Grid (ceil(T/BT) + H,): token blocks sum dq_hat/dk_hat over the H heads (GQA; one (H, BT, N) tile per tensor,
    all loads in flight at once); the last H programs sum one head's per-chunk-slot bias and D partials, BS slots
    per tile. Fixed reduction orders (bit-identical repeats)."""
    pid = tl.program_id(0)
    n = tl.arange(0, N)
    nblocks = tl.cdiv(T, BT)
    if pid < nblocks:
        hh = tl.arange(0, H)
        tok = pid * BT + tl.arange(0, BT)
        msk = (tok < T)[None, :, None]
        off = tok[None, :, None] * (H * N) + hh[:, None, None] * N + n[None, None, :]
        out = tok[:, None] * N + n[None, :]
        dq = tl.sum(tl.load(dqp_ptr + off, mask=msk, other=0.0), axis=0)
        tl.store(dq_ptr + out, dq.to(dq_ptr.dtype.element_ty), mask=(tok < T)[:, None])
        dk = tl.sum(tl.load(dkp_ptr + off, mask=msk, other=0.0), axis=0)
        tl.store(dk_ptr + out, dk.to(dk_ptr.dtype.element_ty), mask=(tok < T)[:, None])
    else:
        h = pid - nblocks
        sl = tl.arange(0, BS)
        acc_qb = tl.zeros([N], dtype=tl.float32)
        acc_kb = tl.zeros([N], dtype=tl.float32)
        acc_d = tl.sum(tl.zeros([BS], dtype=tl.float32), axis=0)
        s0 = 0
        while s0 < NSLOT:  # runtime bound: see _m3b_dstate_kernel
            si = s0 + sl
            smask = si < NSLOT
            off = si[:, None] * (H * N) + h * N + n[None, :]
            acc_qb += tl.sum(tl.load(dqbp_ptr + off, mask=smask[:, None], other=0.0), axis=0)
            acc_kb += tl.sum(tl.load(dkbp_ptr + off, mask=smask[:, None], other=0.0), axis=0)
            acc_d += tl.sum(tl.load(ddp_ptr + si * H + h, mask=smask, other=0.0), axis=0)
            s0 += BS
        tl.store(dqb_ptr + h * N + n, acc_qb)
        tl.store(dkb_ptr + h * N + n, acc_kb)
        tl.store(dd_ptr + h, acc_d)


class Mamba3BwdConfig(NamedTuple):
    """Launch configuration (measured on an H200, see bench/mamba3/NOTES.md `## Backward`, `## Speed pass`).

    num_warps: warps per (chunk, head) program of the chunk kernel (H200, c1, commit eb75334: 4 warps 1.163 ms bwd,
    8 warps 1.308); input_precision: tl.dot precision of the fp32 operands ("tf32", "tf32x3" or "ieee");
    dstate_scan: False runs the state-gradient chain as one serial kernel (measured), True as a chunk-parallel
    local-term kernel plus an elementwise reverse scan (not yet measured); dstate_warps: warps of the chain kernel
    or of the local-term kernel; scan_block: state elements (of 64 x 128) per scan program, a power of two;
    chunk_sides: 1 runs the chunk body's q side and k side per state half, 2 the q side of both halves first (ptxas
    sm_90a, 8 warps: 2.0 KB spill stores vs 2.4 KB, 80 KB shared vs 104 KB; measured 30 % slower); "full" body only;
    body: "full" runs one chunk-body program per (chunk, head) (`_m3b_chunk_kernel`), "rows2" two, one per 32-token
    row block (`_m3b_chunk_rows_kernel`), "halves2" two, one per 64-wide state half (`_m3b_chunk_halves_kernel`)
    (NOTES `## Session 2: chunk body rewrite`); rows_block_n: width of the
    state blocks the "rows2" body walks (16, 32 or 64: a divisor of the 64 rotated dims).
    """

    num_warps: int = 4
    input_precision: str = "tf32"
    dstate_scan: bool = False
    dstate_warps: int = 8
    scan_block: int = 1024
    chunk_sides: int = 1
    body: str = "full"
    rows_block_n: int = 32


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


def mamba3_siso_bwd(q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens, saved,
                    dout, dfinal_angle, dfinal_ssm, dfinal_k, dfinal_v, *, config=DEFAULT_BWD_CONFIG):
    """Full VJP of the Mamba-3 SISO varlen operator (spec §7.1) from the forward's saved tensors.

    Inputs in the project layout (spec "Decisions"): q, k (T, 1, 128) bf16; v, z (T, 32, 64) bf16; adt, dt (T, 32)
    fp32; trap (T, 32) bf16; q_bias, k_bias (32, 128) fp32; angles (T, 32, 32) bf16; d (32,) fp32; cu_seqlens
    (S+1,) int32. `saved` is the forward's `Mamba3FwdSaved`: y fp32 (T, 32, 64) pre-gate output, phi fp32
    (T, 32, 32) wrapped cumulative angle, chunk_states fp32 (T//64 + S, 32, 64, 128) state entering each chunk
    (sequence s, chunk c at cu_seqlens[s]//64 + s + c). Cotangents: dout (T, 32, 64), dfinal_angle (S, 32, 32),
    dfinal_ssm (S, 32, 64, 128), dfinal_k (S, 32, 128), dfinal_v (S, 32, 64).
    `config`: a Mamba3BwdConfig (warps, dot precision).
    Returns `Mamba3BwdGrads` (dq, dk, dv, dadt, ddt, dtrap, dq_bias, dk_bias, dangles, dd, dz); no host sync.
    """
    T, H, P = v.shape
    N = q.shape[-1]
    NA = angles.shape[-1]
    S = cu_seqlens.shape[0] - 1
    nslot = T // CHUNK + S  # chunk slots, as the forward's chunk_states
    dev = v.device
    f32 = torch.float32
    (q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens, y, phi, chunk_states,
     dout, dfinal_angle, dfinal_ssm, dfinal_k, dfinal_v) = (
        x.contiguous() for x in (q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens,
                                 saved.y, saved.phi, saved.chunk_states,
                                 dout, dfinal_angle, dfinal_ssm, dfinal_k, dfinal_v))
    if config.body not in ("full", "rows2", "halves2"):
        raise ValueError(f"config.body: expected 'full', 'rows2' or 'halves2', got {config.body!r}")
    if config.rows_block_n not in (16, 32, 64):
        raise ValueError(f"config.rows_block_n: expected 16, 32 or 64, got {config.rows_block_n}")
    if config.chunk_sides not in (1, 2):
        raise ValueError(f"config.chunk_sides: expected 1 or 2, got {config.chunk_sides}")
    if P * N % config.scan_block != 0:
        raise ValueError(f"config.scan_block: expected a power of two dividing {P * N}, got {config.scan_block}")
    dstates = torch.empty((nslot, H, P, N), device=dev, dtype=f32)
    dz = torch.empty_like(z)
    if config.dstate_scan:
        _m3b_dstate_local_kernel[(nslot, H)](
            q, q_bias, adt, phi, z, y, dout, cu_seqlens, dstates, dz, S,
            H=H, P=P, N=N, NA=NA, C=CHUNK, SB=triton.next_power_of_2(S + 1), PREC=config.input_precision,
            num_warps=config.dstate_warps,
        )
        _m3b_dstate_scan_kernel[(P * N // config.scan_block, H, S)](
            adt, cu_seqlens, dfinal_ssm, dstates, H=H, PN=P * N, C=CHUNK, BLOCK=config.scan_block, num_warps=4,
        )
    else:
        _m3b_dstate_kernel[(H, S, 2)](
            q, q_bias, adt, phi, z, y, dout, cu_seqlens, dfinal_ssm, dstates, dz,
            H=H, P=P, N=N, NA=NA, C=CHUNK, PREC=config.input_precision, num_warps=config.dstate_warps,
        )
    rb = 2 if config.body == "rows2" else 1  # partial rows per slot of the bias/D/dPhi sums
    npart = 2 if config.body == "halves2" else 1  # per-token partials of ds, dgamma, dl
    dv = torch.empty_like(v)
    dadt = torch.empty_like(adt)
    dq_part = torch.empty((T, H, N), device=dev, dtype=f32)
    dk_part = torch.empty((T, H, N), device=dev, dtype=f32)
    dphi = torch.empty((T, H, NA), device=dev, dtype=f32)
    dphi_sums = torch.empty((nslot * rb, H, NA), device=dev, dtype=f32)
    ds_tok = torch.empty((npart, T, H), device=dev, dtype=f32)
    dgamma = torch.empty((npart, T, H), device=dev, dtype=f32)
    dqb_part = torch.empty((nslot * rb, H, N), device=dev, dtype=f32)
    dkb_part = torch.empty((nslot * rb, H, N), device=dev, dtype=f32)
    dd_part = torch.empty((nslot * rb, H), device=dev, dtype=f32)
    if rb == 2:
        dl = torch.empty((T, H), device=dev, dtype=f32)
        dlam_part = torch.empty((nslot * rb, H), device=dev, dtype=f32)
        _m3b_chunk_rows_kernel[(nslot, H, 2)](
            q, k, v, adt, dt, trap, q_bias, k_bias, d, z, cu_seqlens, phi, chunk_states, dstates, dout, dfinal_k,
            dfinal_v, dv, dl, dlam_part, dq_part, dk_part, dphi, dphi_sums, ds_tok, dgamma, dqb_part, dkb_part,
            dd_part, S, H=H, P=P, N=N, NA=NA, C=CHUNK, SB=triton.next_power_of_2(S + 1), NB=config.rows_block_n,
            PREC=config.input_precision, num_warps=config.num_warps,
        )
    elif config.body == "halves2":
        dl = torch.empty((npart, T, H), device=dev, dtype=f32)
        dlam_part = torch.empty((nslot, 2, H), device=dev, dtype=f32)
        _m3b_chunk_halves_kernel[(nslot, H, 2)](
            q, k, v, adt, dt, trap, q_bias, k_bias, d, z, cu_seqlens, phi, chunk_states, dstates, dout, dfinal_k,
            dfinal_v, dv, dl, dlam_part, dq_part, dk_part, dphi, dphi_sums, ds_tok, dgamma, dqb_part, dkb_part,
            dd_part, S, T, H=H, P=P, N=N, NA=NA, C=CHUNK, SB=triton.next_power_of_2(S + 1),
            PREC=config.input_precision, num_warps=config.num_warps,
        )
    else:
        dl = dlam_part = dadt  # the angle kernel leaves them alone (DADT false)
        _m3b_chunk_kernel[(nslot, H)](
            q, k, v, adt, dt, trap, q_bias, k_bias, d, z, cu_seqlens, phi, chunk_states, dstates, dout, dfinal_k,
            dfinal_v, dv, dadt, dq_part, dk_part, dphi, dphi_sums, ds_tok, dgamma, dqb_part, dkb_part, dd_part,
            S, H=H, P=P, N=N, NA=NA, C=CHUNK, SB=max(2, triton.next_power_of_2(S)), PREC=config.input_precision,
            SIDES=config.chunk_sides, num_warps=config.num_warps,
        )
    ddt = torch.empty_like(dt)
    dtrap = torch.empty_like(trap)
    dangles = torch.empty_like(angles)
    _m3b_angle_kernel[(nslot, H)](
        dt, trap, angles, cu_seqlens, dfinal_angle, dphi, dphi_sums, ds_tok, dgamma, ddt, dtrap, dangles,
        dl, dlam_part, dadt,
        S, T, H=H, NA=NA, C=CHUNK, SB=triton.next_power_of_2(S + 1), CB=_ANGLE_SLOTS, RB=rb,
        DADT=config.body != "full", NPART=npart, num_warps=4,
    )
    dq = torch.empty_like(q)
    dk = torch.empty_like(k)
    dq_bias = torch.empty_like(q_bias)
    dk_bias = torch.empty_like(k_bias)
    dd = torch.empty_like(d)
    _m3b_reduce_kernel[(triton.cdiv(T, _REDUCE_TOKENS) + H,)](
        dq_part, dk_part, dq, dk, dqb_part, dkb_part, dd_part, dq_bias, dk_bias, dd, T, nslot * rb,
        H=H, N=N, BT=_REDUCE_TOKENS, BS=_REDUCE_SLOTS, num_warps=8,
    )
    return Mamba3BwdGrads(dq, dk, dv, dadt, ddt, dtrap, dq_bias, dk_bias, dangles, dd, dz)
