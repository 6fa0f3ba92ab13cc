# Mamba-3 SISO backward (spec §7.1 full VJP, computed chunk-wise as in §7.2).
# Kernel 1 `_m3b_chunk_kernel`, grid (H, S): one program per (value head, sequence) walks that sequence's
#   64-token chunks from last to first, carrying dS_acc (64x128 fp32, kept as even/odd column halves), the
#   reverse cumsum of dPhi and the pending shifted-gamma term of the chunk's first token in registers. Per chunk
#   it does 14 (64x64)x(64x64) fp32 dots and all per-token work: gate (dz, dy), dv, dadt, ddt, dtrap, dangles,
#   and per-head dq_hat/dk_hat rows plus per-(sequence, head) partial sums for q_bias, k_bias and D.
# Kernel 2 `_m3b_reduce_kernel`, grid (ceil(T/32) + 1,): token blocks of 32 sum the per-head dq_hat/dk_hat rows
#   over the 32 heads (GQA 32 -> 1) in a fixed order; the last program sums the bias/D partials over sequences.
# No atomics: every sum has a fixed order, so repeated calls are bit-identical.
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from ssmkit.mamba3.shapes import CHUNK

_REDUCE_TOKENS = 32


@triton.jit
def _m3b_tanh(x):
    """tanh in fp32 through exp of a non-positive argument (no overflow)."""
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -t, t)


@triton.jit
def _m3b_chunk_kernel(
    q_ptr, k_ptr, v_ptr, adt_ptr, dt_ptr, trap_ptr, qb_ptr, kb_ptr, ang_ptr, d_ptr, z_ptr, cu_ptr,
    y_ptr, phi_ptr, states_ptr,
    dout_ptr, dfa_ptr, dfs_ptr, dfk_ptr, dfv_ptr,
    dv_ptr, dz_ptr, dadt_ptr, ddt_ptr, dtrap_ptr, dang_ptr,
    dqp_ptr, dkp_ptr, dqbp_ptr, dkbp_ptr, ddp_ptr,
    H: tl.constexpr, P: tl.constexpr, N: tl.constexpr, NA: tl.constexpr, C: tl.constexpr,
    PREC: tl.constexpr,
):
    h = tl.program_id(0)
    s = tl.program_id(1)
    NH: tl.constexpr = N // 2  # rotary pairs (2m, 2m+1); pair m < NA is rotated by phi[m]
    PI: tl.constexpr = 3.141592653589793

    bos = tl.load(cu_ptr + s)
    eos = tl.load(cu_ptr + s + 1)
    nchunks = tl.cdiv(eos - bos, C)
    state_base = bos // C + s  # chunk-state index of this sequence's chunk 0 (forward's layout)

    i = tl.arange(0, C)
    m = tl.arange(0, NH)
    pv = tl.arange(0, P)
    rot = m < NA
    causal = i[:, None] > i[None, :]
    prev_of = i[None, :] == (i[:, None] - 1)  # [i, j]: j is the token just before i

    qb_e = tl.load(qb_ptr + h * N + 2 * m)
    qb_o = tl.load(qb_ptr + h * N + 2 * m + 1)
    kb_e = tl.load(kb_ptr + h * N + 2 * m)
    kb_o = tl.load(kb_ptr + h * N + 2 * m + 1)
    d_h = tl.load(d_ptr + h)
    fin_k = (s * H + h) * N
    dfk_e = tl.load(dfk_ptr + fin_k + 2 * m)
    dfk_o = tl.load(dfk_ptr + fin_k + 2 * m + 1)
    dfv = tl.load(dfv_ptr + (s * H + h) * P + pv).to(tl.float32)

    # dS_acc starts at dfinal_ssm; (P, N) split into even/odd state columns.
    fin_s = dfs_ptr + (s * H + h) * P * N + pv[:, None] * N + 2 * m[None, :]
    ds_e = tl.load(fin_s)
    ds_o = tl.load(fin_s + 1)
    # Reverse cumsum of dPhi over the sequence starts at dfinal_angle.
    g_carry = tl.load(dfa_ptr + (s * H + h) * NA + m, mask=rot, other=0.0)

    qb_acc_e = tl.zeros([NH], dtype=tl.float32)
    qb_acc_o = tl.zeros([NH], dtype=tl.float32)
    kb_acc_e = tl.zeros([NH], dtype=tl.float32)
    kb_acc_o = tl.zeros([NH], dtype=tl.float32)
    dd_acc = tl.sum(tl.zeros([C], dtype=tl.float32), axis=0)
    # Chunk c's first token needs ds of the token before it (chunk c-1, handled next): carried scalars.
    pend_ddt = dd_acc
    pend_dp = dd_acc
    pend_p = dd_acc
    pend_dt = dd_acc

    ci = 0
    while ci < nchunks:  # not `for ... in range(nchunks)`: the interpreter (numpy 2) rejects a runtime range bound
        c = nchunks - 1 - ci
        t0 = bos + c * C
        tok = t0 + i
        valid = tok < eos
        is_last = tok == eos - 1
        vmask = valid[:, None]

        # ---- rotated, biased q/k (F3, F4) ----
        qrow = q_ptr + tok[:, None] * N + 2 * m[None, :]
        krow = k_ptr + tok[:, None] * N + 2 * m[None, :]
        qe = tl.where(vmask, tl.load(qrow, mask=vmask, other=0.0).to(tl.float32) + qb_e[None, :], 0.0)
        qo = tl.where(vmask, tl.load(qrow + 1, mask=vmask, other=0.0).to(tl.float32) + qb_o[None, :], 0.0)
        ke = tl.where(vmask, tl.load(krow, mask=vmask, other=0.0).to(tl.float32) + kb_e[None, :], 0.0)
        ko = tl.where(vmask, tl.load(krow + 1, mask=vmask, other=0.0).to(tl.float32) + kb_o[None, :], 0.0)
        hna = tok[:, None] * (H * NA) + h * NA + m[None, :]
        rmask = vmask & rot[None, :]
        phi = tl.load(phi_ptr + hna, mask=rmask, other=0.0)
        cs = tl.cos(phi)
        sn = tl.sin(phi)
        qte = qe * cs - qo * sn
        qto = qe * sn + qo * cs
        kte = ke * cs - ko * sn
        kto = ke * sn + ko * cs
        qk = tl.sum(qe * ke + qo * ko, axis=1)

        # ---- gamma, shifted gamma, scale (F5); decay (F6) ----
        th_ = tok * H + h
        dt_c = tl.load(dt_ptr + th_, mask=valid, other=0.0)
        p_c = tl.sigmoid(tl.load(trap_ptr + th_, mask=valid, other=0.0).to(tl.float32))
        gam = dt_c * p_c
        nvalid = (tok + 1) < eos
        dt_n = tl.load(dt_ptr + th_ + H, mask=nvalid, other=0.0)
        p_n = tl.sigmoid(tl.load(trap_ptr + th_ + H, mask=nvalid, other=0.0).to(tl.float32))
        sc = gam + dt_n * (1.0 - p_n)
        adt_c = tl.load(adt_ptr + th_, mask=valid, other=0.0)
        ell = tl.cumsum(adt_c, axis=0)
        lam = tl.sum(adt_c, axis=0)
        e_ell = tl.exp(ell)
        e_rev = tl.exp(lam - ell)
        e_lam = tl.exp(lam)
        kse = kte * sc[:, None]
        kso = kto * sc[:, None]

        # ---- gate (F8) ----
        hp = tok[:, None] * (H * P) + h * P + pv[None, :]
        dout = tl.load(dout_ptr + hp, mask=vmask, other=0.0).to(tl.float32)
        zz = tl.load(z_ptr + hp, mask=vmask, other=0.0).to(tl.float32)
        yy = tl.load(y_ptr + hp, mask=vmask, other=0.0)
        sig = tl.sigmoid(zz)
        dy = dout * zz * sig
        dzv = dout * yy * sig * (1.0 + zz * (1.0 - sig))
        tl.store(dz_ptr + hp, dzv.to(dz_ptr.dtype.element_ty), mask=vmask)
        vv = tl.load(v_ptr + hp, mask=vmask, other=0.0).to(tl.float32)

        # ---- chunk matrices (§7.2) ----
        decay = tl.where(causal, tl.exp(tl.minimum(ell[:, None] - ell[None, :], 0.0)), 0.0)
        am = tl.dot(qte, tl.trans(kse), input_precision=PREC) + tl.dot(qto, tl.trans(kso), input_precision=PREC)
        gm = tl.dot(dy, tl.trans(vv), input_precision=PREC)
        mg = decay * gm
        ma = decay * am
        st = states_ptr + (state_base + c) * (H * P * N) + h * (P * N) + pv[:, None] * N + 2 * m[None, :]
        s_e = tl.load(st)
        s_o = tl.load(st + 1)
        x_e = tl.dot(dy, s_e, input_precision=PREC)  # dY S_c
        x_o = tl.dot(dy, s_o, input_precision=PREC)
        vds_e = tl.dot(vv, ds_e, input_precision=PREC)  # V dS_acc
        vds_o = tl.dot(vv, ds_o, input_precision=PREC)

        dqt_e = tl.dot(mg, kse, input_precision=PREC) + e_ell[:, None] * x_e
        dqt_o = tl.dot(mg, kso, input_precision=PREC) + e_ell[:, None] * x_o
        mgt = tl.trans(mg)
        dks_e = tl.dot(mgt, qte, input_precision=PREC) + e_rev[:, None] * vds_e
        dks_o = tl.dot(mgt, qto, input_precision=PREC) + e_rev[:, None] * vds_o
        ksds = tl.dot(kse, tl.trans(ds_e), input_precision=PREC) + tl.dot(kso, tl.trans(ds_o), input_precision=PREC)
        dvv = (tl.dot(tl.trans(ma), dy, input_precision=PREC) + e_rev[:, None] * ksds
               + (d_h + gam * qk)[:, None] * dy)
        dvv += tl.where(is_last[:, None], dfv[None, :], 0.0)
        tl.store(dv_ptr + hp, dvv.to(dv_ptr.dtype.element_ty), mask=vmask)

        # ---- dadt: in-chunk dl, chunk-total dLambda ----
        mm = ma * gm
        fwd_state = e_rev * tl.sum(vds_e * kse + vds_o * kso, axis=1)
        dl = (tl.sum(mm, axis=1) - tl.sum(mm, axis=0)
              + e_ell * tl.sum(x_e * qte + x_o * qto, axis=1) - fwd_state)
        dlam = tl.sum(fwd_state, axis=0) + e_lam * tl.sum(tl.sum(s_e * ds_e + s_o * ds_o, axis=1), axis=0)
        dadt = tl.sum(dl, axis=0) - tl.cumsum(dl, axis=0) + dl + dlam
        tl.store(dadt_ptr + th_, dadt, mask=valid)

        # ---- dS_acc for the previous chunk ----
        dyl = dy * e_ell[:, None]
        ds_e = e_lam * ds_e + tl.dot(tl.trans(dyl), qte, input_precision=PREC)
        ds_o = e_lam * ds_o + tl.dot(tl.trans(dyl), qto, input_precision=PREC)

        # ---- per token: scale/gamma grads, inverse rotation, dPhi (§7.1) ----
        dkt_e = sc[:, None] * dks_e + tl.where(is_last[:, None], dfk_e[None, :], 0.0)
        dkt_o = sc[:, None] * dks_o + tl.where(is_last[:, None], dfk_o[None, :], 0.0)
        ds_tok = tl.sum(dks_e * kte + dks_o * kto, axis=1)
        e_tok = tl.sum(dy * vv, axis=1)
        dgam = ds_tok + e_tok * qk
        ge = (gam * e_tok)[:, None]
        dqh_e = dqt_e * cs + dqt_o * sn + ge * ke
        dqh_o = dqt_o * cs - dqt_e * sn + ge * ko
        dkh_e = dkt_e * cs + dkt_o * sn + ge * qe
        dkh_o = dkt_o * cs - dkt_e * sn + ge * qo
        dphi = tl.where(rmask, dqt_o * qte - dqt_e * qto + dkt_o * kte - dkt_e * kto, 0.0)

        hn = tok[:, None] * (H * N) + h * N + 2 * m[None, :]
        tl.store(dqp_ptr + hn, dqh_e, mask=vmask)
        tl.store(dqp_ptr + hn + 1, dqh_o, mask=vmask)
        tl.store(dkp_ptr + hn, dkh_e, mask=vmask)
        tl.store(dkp_ptr + hn + 1, dkh_o, mask=vmask)
        qb_acc_e += tl.sum(dqh_e, axis=0)
        qb_acc_o += tl.sum(dqh_o, axis=0)
        kb_acc_e += tl.sum(dkh_e, axis=0)
        kb_acc_o += tl.sum(dkh_o, axis=0)
        dd_acc += tl.sum(e_tok, axis=0)

        # ---- angles: reverse cumsum of dPhi plus carry (F1, F2) ----
        gphi = g_carry[None, :] + tl.sum(dphi, axis=0)[None, :] - tl.cumsum(dphi, axis=0) + dphi
        g_carry += tl.sum(dphi, axis=0)
        th = _m3b_tanh(tl.load(ang_ptr + hna, mask=rmask, other=0.0).to(tl.float32))
        dang = gphi * dt_c[:, None] * PI * (1.0 - th * th)
        tl.store(dang_ptr + hna, dang.to(dang_ptr.dtype.element_ty), mask=rmask)

        # ---- dt, trap: gamma_t = dt_t p_t, gamma'_{t-1} = dt_t (1 - p_t) ----
        ddt_part = dgam * p_c + tl.sum(gphi * PI * th, axis=1)
        dp_part = dt_c * dgam
        ds_prev = tl.sum(tl.where(prev_of, ds_tok[None, :], 0.0), axis=1)
        ddt = ddt_part + ds_prev * (1.0 - p_c)
        dp = dp_part - dt_c * ds_prev
        inner = valid & (i > 0)
        tl.store(ddt_ptr + th_, ddt, mask=inner)
        tl.store(dtrap_ptr + th_, (dp * p_c * (1.0 - p_c)).to(dtrap_ptr.dtype.element_ty), mask=inner)
        # Finish the first token of chunk c+1 (its previous token is this chunk's last, row C-1).
        ds_last = tl.sum(tl.where(i == C - 1, ds_tok, 0.0), axis=0)
        nxt = (t0 + C) * H + h
        has_pend = ci > 0
        tl.store(ddt_ptr + nxt, pend_ddt + ds_last * (1.0 - pend_p), mask=has_pend)
        pend_trap = (pend_dp - pend_dt * ds_last) * pend_p * (1.0 - pend_p)
        tl.store(dtrap_ptr + nxt, pend_trap.to(dtrap_ptr.dtype.element_ty), mask=has_pend)
        first = i == 0
        pend_ddt = tl.sum(tl.where(first, ddt_part, 0.0), axis=0)
        pend_dp = tl.sum(tl.where(first, dp_part, 0.0), axis=0)
        pend_p = tl.sum(tl.where(first, p_c, 0.0), axis=0)
        pend_dt = tl.sum(tl.where(first, dt_c, 0.0), axis=0)
        ci += 1

    # The sequence's first token has no shifted-gamma predecessor.
    tl.store(ddt_ptr + bos * H + h, pend_ddt)
    tl.store(dtrap_ptr + bos * H + h, (pend_dp * pend_p * (1.0 - pend_p)).to(dtrap_ptr.dtype.element_ty))

    part = (s * H + h) * N + 2 * m
    tl.store(dqbp_ptr + part, qb_acc_e)
    tl.store(dqbp_ptr + part + 1, qb_acc_o)
    tl.store(dkbp_ptr + part, kb_acc_e)
    tl.store(dkbp_ptr + part + 1, kb_acc_o)
    tl.store(ddp_ptr + s * H + h, dd_acc)


@triton.jit
def _m3b_reduce_kernel(
    dqp_ptr, dkp_ptr, dq_ptr, dk_ptr, dqbp_ptr, dkbp_ptr, ddp_ptr, dqb_ptr, dkb_ptr, dd_ptr,
    T, S,
    H: tl.constexpr, N: tl.constexpr, BT: tl.constexpr,
):
    pid = tl.program_id(0)
    n = tl.arange(0, N)
    if pid * BT < T:
        tok = pid * BT + tl.arange(0, BT)
        msk = (tok < T)[:, None]
        acc_q = tl.zeros([BT, N], dtype=tl.float32)
        acc_k = tl.zeros([BT, N], dtype=tl.float32)
        for h in range(H):
            off = tok[:, None] * (H * N) + h * N + n[None, :]
            acc_q += tl.load(dqp_ptr + off, mask=msk, other=0.0)
            acc_k += tl.load(dkp_ptr + off, mask=msk, other=0.0)
        out = tok[:, None] * N + n[None, :]
        tl.store(dq_ptr + out, acc_q.to(dq_ptr.dtype.element_ty), mask=msk)
        tl.store(dk_ptr + out, acc_k.to(dk_ptr.dtype.element_ty), mask=msk)
    else:
        hh = tl.arange(0, H)
        off = hh[:, None] * N + n[None, :]
        acc_qb = tl.zeros([H, N], dtype=tl.float32)
        acc_kb = tl.zeros([H, N], dtype=tl.float32)
        acc_d = tl.zeros([H], dtype=tl.float32)
        si = 0
        while si < S:  # runtime bound: see the chunk loop
            acc_qb += tl.load(dqbp_ptr + si * H * N + off)
            acc_kb += tl.load(dkbp_ptr + si * H * N + off)
            acc_d += tl.load(ddp_ptr + si * H + hh)
            si += 1
        tl.store(dqb_ptr + off, acc_qb)
        tl.store(dkb_ptr + off, acc_kb)
        tl.store(dd_ptr + hh, acc_d)


class Mamba3BwdConfig(NamedTuple):
    """Launch configuration of the chunk kernel (measured on an H200, see bench/mamba3/NOTES.md `## Backward`).

    num_warps: warps per (head, sequence) program; input_precision: tl.dot precision of the fp32 operands
    ("tf32", "tf32x3" or "ieee").
    """

    num_warps: int = 8
    input_precision: str = "tf32"


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
    dev = v.device
    f32 = torch.float32
    tensors = [t.contiguous() for t in (q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens,
                                         saved.y, saved.phi, saved.chunk_states,
                                         dout, dfinal_angle, dfinal_ssm, dfinal_k, dfinal_v)]
    dv = torch.empty_like(v)
    dz = torch.empty_like(z)
    dadt = torch.empty_like(adt)
    ddt = torch.empty_like(dt)
    dtrap = torch.empty_like(trap)
    dangles = torch.empty_like(angles)
    dq_part = torch.empty((T, H, N), device=dev, dtype=f32)
    dk_part = torch.empty((T, H, N), device=dev, dtype=f32)
    dqb_part = torch.empty((S, H, N), device=dev, dtype=f32)
    dkb_part = torch.empty((S, H, N), device=dev, dtype=f32)
    dd_part = torch.empty((S, H), device=dev, dtype=f32)
    _m3b_chunk_kernel[(H, S)](
        *tensors, dv, dz, dadt, ddt, dtrap, dangles, dq_part, dk_part, dqb_part, dkb_part, dd_part,
        H=H, P=P, N=N, NA=NA, C=CHUNK, PREC=config.input_precision, num_warps=config.num_warps,
    )
    dq = torch.empty_like(q)
    dk = torch.empty_like(k)
    dq_bias = torch.empty_like(q_bias)
    dk_bias = torch.empty_like(k_bias)
    dd = torch.empty_like(d)
    _m3b_reduce_kernel[(triton.cdiv(T, _REDUCE_TOKENS) + 1,)](
        dq_part, dk_part, dq, dk, dqb_part, dkb_part, dd_part, dq_bias, dk_bias, dd, T, S,
        H=H, N=N, BT=_REDUCE_TOKENS, num_warps=4,
    )
    return Mamba3BwdGrads(dq, dk, dv, dadt, ddt, dtrap, dq_bias, dk_bias, dangles, dd, dz)
