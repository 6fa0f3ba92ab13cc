# The intra-chunk part of the Mamba-3 backward's chunk body (spec §7.2), written by one of two kernels:
#  - the backward's intra kernel (`_m3b_intra_kernel`, bwd.py), from the masked scores the forward's chunk scan saved
#    (the autograd form, whose cotangent is not known during the forward);
#  - in a full-VJP call, the forward's chunk scan itself (`_mamba3_fwd_chunk_scan_kernel` with INTRA, fwd.py): the
#    masked scores decay o A, V and dY = dout * silu(z) are in its registers already, so the scores are neither
#    stored nor read back, and the intra kernel is left with dv's state term alone (bench/mamba3/NOTES.md "Session
#    37").
# Both call the same helpers below, so both give the same bits.
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from ssmkit.kernels.mamba3.dots import _m3_dot, _m3_split_bf16
from ssmkit.mamba3.shapes import CHUNK


class ChunkIntra(NamedTuple):
    """What the intra-chunk part writes for the side kernels, the finish kernel and dv (nslot = T // 64 + S chunk
    slots, as the forward's chunk_states; every slot's rows of mg, side_scalars, exp_lam and dd_part are written,
    a slot no chunk maps to with zeros (its scalars as those of an empty chunk), since the side kernels and the
    reduce read every slot).

    mg: (nslot, 32, 2, 64, 64) bf16, M o G = decay o (dY V^T) split into hi and lo (`_m3_split_bf16`).
    dl_parts: (5, T, 32) fp32, the parts of dl: plane 0 the intra-chunk part (written here), planes 1-4 the q side's
        and the k side's per state half (the side kernels).
    e_tok: (T, 32) fp32, e = dY . v per token and head.
    dd_part: (nslot, 32) fp32, the sum of e over the slot's chunk (dD's partial).
    side_scalars: (nslot, 32, 4, 64) fp32, per token e^l, e^{L-l}, gamma, s (the side kernels' chunk scalars).
    exp_lam: (nslot, 32) fp32, e^L of the chunk.
    dv_part: (T, 32, 64) fp32, dv's intra-chunk part (M o A)^T dY + (D + gamma q^.k^) dY, when the chunk scan wrote
        it (the intra kernel then adds dv's state term and dfinal_v: ``mamba3_siso_bwd(chunk_intra=...)``); None when
        the intra kernel writes everything.
    """

    mg: torch.Tensor
    dl_parts: torch.Tensor
    e_tok: torch.Tensor
    dd_part: torch.Tensor
    side_scalars: torch.Tensor
    exp_lam: torch.Tensor
    dv_part: torch.Tensor | None


def allocate_chunk_intra(v: torch.Tensor, nslot: int, dv_part: bool) -> ChunkIntra:
    """Uninitialised ``ChunkIntra`` buffers for v (T, 32, 64) and nslot chunk slots; ``dv_part``: whether the chunk
    scan writes dv's intra-chunk part (a full-VJP call; else None)."""
    T, H, P = v.shape
    dev, f32 = v.device, torch.float32
    return ChunkIntra(
        mg=torch.empty((nslot, H, 2, CHUNK, CHUNK), device=dev, dtype=torch.bfloat16),
        dl_parts=torch.empty((5, T, H), device=dev, dtype=f32),
        e_tok=torch.empty((T, H), device=dev, dtype=f32),
        dd_part=torch.empty((nslot, H), device=dev, dtype=f32),
        side_scalars=torch.empty((nslot, H, 4, CHUNK), device=dev, dtype=f32),
        exp_lam=torch.empty((nslot, H), device=dev, dtype=f32),
        dv_part=torch.empty((T, H, P), device=dev, dtype=f32) if dv_part else None,
    )


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
def _m3b_store_side_scalars(scal_ptr, elam_ptr, slot, h, ell, lam, gam, sc, H: tl.constexpr, C: tl.constexpr):
    """Store the side kernels' chunk scalars of one slot and head (``ChunkIntra.side_scalars``, ``exp_lam``) from
    ell (C,) (the in-chunk cumsum of adt), Lambda (its last element), gamma and s (C,) (zeros for an empty slot)."""
    row = scal_ptr + (slot * H + h) * 4 * C + tl.arange(0, C)
    tl.store(row, tl.exp(ell))
    tl.store(row + C, tl.exp(lam - ell))
    tl.store(row + 2 * C, gam)
    tl.store(row + 3 * C, sc)
    tl.store(elam_ptr + slot * H + h, tl.exp(lam))


@triton.jit
def _m3b_store_empty_slot(mg_ptr, scal_ptr, elam_ptr, ddp_ptr, slot, h, H: tl.constexpr, C: tl.constexpr):
    """What a slot no chunk maps to holds (the intra kernel's values for it): zero M o G, an empty chunk's scalars,
    a zero dD partial."""
    zero = tl.zeros([C], dtype=tl.float32)
    _m3b_store_side_scalars(scal_ptr, elam_ptr, slot, h, zero, 0.0, zero, zero, H, C)
    mg_tile = _m3b_mg_tile(mg_ptr, slot, h, H, C, False)
    tl.store(mg_tile, tl.zeros([C, C], dtype=tl.bfloat16))
    tl.store(mg_tile + C * C, tl.zeros([C, C], dtype=tl.bfloat16))
    tl.store(ddp_ptr + slot * H + h, 0.0)


@triton.jit
def _m3b_intra_body(ma_src, MA_IN_REGS: tl.constexpr, active, dy_hi, dy_lo, v, ell, gam, qk_ptr, dval, tok, valid,
                    slot, h, mg_ptr, etok_ptr, ddp_ptr, dl_ptr, H: tl.constexpr, C: tl.constexpr,
                    TPREC: tl.constexpr):
    """The intra-chunk part of one chunk and head: G = dY V^T (dY as its bf16 halves dy_hi, dy_lo (C, P), v (C, P)
    bf16, exact), stores e = diag(G) per token and its sum (dD's partial), M o G split into bf16 (``ChunkIntra.mg``)
    and dl's intra part (row minus column sums of (M o A) o G); returns dv's intra part (C, P) fp32,
    (M o A)^T dY + (D + gamma q^.k^) dY (dval = D of the head). M o A = decay o A, strictly causal, (C, C) fp32:
    ``ma_src`` itself (MA_IN_REGS: the chunk scan's tile) or loaded from the (nslot, H, C, C) tensor at ``ma_src``
    (zeros where not ``active``). dY's elementwise uses are folded into the dots (e is G's diagonal, (D + gamma
    q^.k^) dY a diagonal of dv's matrix), so that its halves are neither added back nor converted between layouts.
    What is final early is stored early, so that nothing of it stays live through the dots (session 26: under a 168
    cap, offline, 355 -> 105 spill instructions in the intra kernel)."""
    i = tl.arange(0, C)
    th_ = tok * H + h
    diag = i[:, None] == i[None, :]
    g = _m3_dot(dy_hi, tl.trans(v), TPREC, a_lo=dy_lo)  # (v exact)
    e_tok = tl.sum(tl.where(diag, g, 0.0), axis=1)
    tl.store(etok_ptr + th_, e_tok, mask=valid)
    tl.store(ddp_ptr + slot * H + h, tl.sum(e_tok, axis=0))
    decay = tl.where(i[:, None] > i[None, :], tl.exp(-tl.maximum(ell[None, :] - ell[:, None], 0.0)), 0.0)
    mg_hi, mg_lo = _m3_split_bf16(decay * g)  # stored split for the side kernel's dots (`_m3_dot`)
    mg_tile = _m3b_mg_tile(mg_ptr, slot, h, H, C, False)
    tl.store(mg_tile, mg_hi)
    tl.store(mg_tile + C * C, mg_lo)
    if MA_IN_REGS:
        ma = ma_src
    else:
        ma = tl.load(ma_src + ((slot * H + h) * C + i[:, None]) * C + i[None, :], mask=active, other=0.0)
    mm = ma * g  # (M o A) o G
    tl.store(dl_ptr + th_, tl.sum(mm, axis=1) - tl.sum(mm, axis=0), mask=valid)
    qk = tl.load(qk_ptr + th_, mask=valid, other=0.0)
    w = tl.trans(ma) + tl.where(diag, (dval + gam * qk)[:, None], 0.0)  # (M o A: 0 on i = j)
    return _m3_dot(w, dy_hi, TPREC, b_lo=dy_lo)
