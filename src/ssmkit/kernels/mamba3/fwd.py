# Mamba-3 SISO varlen forward (spec §3 F1-F8, chunked per §4), one launch.
# Computes out = y * silu(z), the four final states and, for the backward, the pre-gate y, the wrapped cumulative
# angle Phi and the fp32 state entering every chunk.
# Grid: (NHEADS * (HEADDIM // BLOCK_P), S). One program per (value head, P-block, sequence) walks the sequence's
# 64-token chunks in order (chunk grid per sequence, spec §4) and keeps its BLOCK_P x 128 slice of the fp32 state
# in registers; the state update S[p, :] only needs v[:, p], so P splits freely (each P-block recomputes the
# rotations and the 64x64 score tile).
# Per chunk: (A) Phi, rotation of q/k (pairs (2m, 2m+1) of dims 0..63 by Phi[m], dims 64..127 pass through),
# scale s, written as fp32 (64, 128) tiles [q_rot, k_scaled] to a per-program scratch that stays in L2 (keeping
# them live in registers spilled); (B) the dots read them back: scores (64x64), readout (64 x BLOCK_P), state
# update (BLOCK_P x 128). Tiles: chunk 64 tokens, N = 128, BLOCK_P in {32, 64}. All arithmetic is fp32; the dots
# take fp32 operands with the configured input precision (rotated q/k and scaled k never go to bf16).
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from ssmkit.mamba3.shapes import CHUNK, DSTATE, HEADDIM, INPUT_NAMES, NANGLES, NHEADS
from ssmkit.mamba3.validate import validate_inputs

_FWD_TWO_PI = tl.constexpr(6.283185307179586)


class Mamba3FwdConfig(NamedTuple):
    """Launch configuration of the forward kernel (tuned on an H200, see bench/mamba3/NOTES.md `## Forward`).

    block_p: value columns per program (32 or 64); num_warps: warps per program; input_precision: tl.dot precision
    for the fp32 operands ("tf32", "tf32x3" or "ieee").
    """

    block_p: int = 64
    num_warps: int = 8
    input_precision: str = "tf32"  # H200: out 1.84e-3, final_ssm 7.1e-4 vs fp64 (tf32x3: 2.3x slower)


DEFAULT_FWD_CONFIG = Mamba3FwdConfig()


class Mamba3FwdSaved(NamedTuple):
    """Tensors the forward keeps for the backward (T4b reads this).

    y: (T, 32, 64) fp32, pre-gate output (spec F7).
    phi: (T, 32, 32) fp32, Phi_t = wrap(cumsum(pi * tanh(angles) * dt)) in [0, 2pi) (spec F2), fp32 cumsum.
    chunk_states: (T // 64 + S, 32, 64, 128) fp32, the (v, qk)-ordered SSM state ENTERING each chunk; sequence s,
        chunk c (local tokens 64c .. 64c+63) is at index cu_seqlens[s] // 64 + s + c. Indices no chunk maps to are
        left unwritten (torch.empty).
    """

    y: torch.Tensor
    phi: torch.Tensor
    chunk_states: torch.Tensor


@triton.jit
def _fwd_wrap_angle(x):
    """x - 2pi * floor(x / 2pi), into [0, 2pi) (spec F2)."""
    return x - _FWD_TWO_PI * tl.floor(x / _FWD_TWO_PI)


@triton.jit
def _fwd_last_row(x, rows, CHUNK_: tl.constexpr):
    """Row CHUNK_-1 of a (CHUNK_, W) tile as a (W,) vector (exact: adds zeros)."""
    return tl.sum(tl.where(rows[:, None] == CHUNK_ - 1, x, 0.0), axis=0)


@triton.jit
def _fwd_rotate_pairs(x, cos, sin, CHUNK_: tl.constexpr, NA: tl.constexpr):
    """Rotate the adjacent pairs (2m, 2m+1) of x (CHUNK_, 2 NA) by angle m: (x0 c - x1 s, x0 s + x1 c) (spec F4)."""
    x0, x1 = tl.split(tl.reshape(x, (CHUNK_, NA, 2)))
    return tl.reshape(tl.join(x0 * cos - x1 * sin, x0 * sin + x1 * cos), (CHUNK_, 2 * NA))


@triton.jit
def _mamba3_siso_fwd_kernel(
    q_ptr, k_ptr, v_ptr, adt_ptr, dt_ptr, trap_ptr, qb_ptr, kb_ptr, ang_ptr, d_ptr, z_ptr, cu_ptr,
    out_ptr, fangle_ptr, fssm_ptr, fk_ptr, fv_ptr, y_ptr, phi_ptr, states_ptr, scratch_ptr,
    H: tl.constexpr, N: tl.constexpr, P: tl.constexpr, NA: tl.constexpr, CHUNK_: tl.constexpr,
    BLOCK_P: tl.constexpr, SAVE: tl.constexpr, PRECISION: tl.constexpr,
):
    HALF: tl.constexpr = N // 2  # rotated half = 2 * NA dims, then the pass-through half
    NPB: tl.constexpr = P // BLOCK_P
    pid = tl.program_id(0)
    seq = tl.program_id(1)
    h = pid // NPB
    pb = pid % NPB
    start = tl.load(cu_ptr + seq)
    end = tl.load(cu_ptr + seq + 1)

    rows = tl.arange(0, CHUNK_)
    cols = tl.arange(0, HALF)
    pcols = pb * BLOCK_P + tl.arange(0, BLOCK_P)
    acols = tl.arange(0, NA)
    lead = pb == 0  # per-(head, sequence) results are written by P-block 0 only

    # F3 biases, per value head, in the same split layout as q/k
    qb_r = tl.load(qb_ptr + h * N + cols)
    qb_p = tl.load(qb_ptr + h * N + HALF + cols)
    kb_r = tl.load(kb_ptr + h * N + cols)
    kb_p = tl.load(kb_ptr + h * N + HALF + cols)
    d_h = tl.load(d_ptr + h)

    ncols = tl.arange(0, N)
    st_tile = pcols[:, None] * N + ncols[None, :]  # (BLOCK_P, N) slice of one (P, N) state
    scr_base = scratch_ptr + (seq * tl.num_programs(0) + pid) * (2 * CHUNK_ * N)  # [q_rot | k_scaled] (CHUNK, N)
    scr_tile = scr_base + rows[:, None] * N + cols[None, :]
    scr_full = scr_base + rows[:, None] * N + ncols[None, :]
    state = tl.zeros((BLOCK_P, N), dtype=tl.float32)
    carry = tl.zeros((NA,), dtype=tl.float32)  # wrapped angle carry
    state_base = start // CHUNK_ + seq
    n_chunks = tl.cdiv(end - start, CHUNK_)
    c = 0
    while c < n_chunks:  # not `for c in range(n_chunks)`: the interpreter (numpy 2) rejects a runtime range bound
        t = start + c * CHUNK_ + rows
        valid = t < end
        valid_next = (t + 1) < end  # shifted terms stop at the sequence end, not the chunk end (spec F5, §9.6)
        vmask = valid[:, None]

        # F5, F6: per-token scalars of this head (zero past the end, so s = 0 and adt = 0 there)
        adt = tl.load(adt_ptr + t * H + h, mask=valid, other=0.0)
        dt = tl.load(dt_ptr + t * H + h, mask=valid, other=0.0)
        p = tl.sigmoid(tl.load(trap_ptr + t * H + h, mask=valid, other=0.0).to(tl.float32))
        dt_n = tl.load(dt_ptr + (t + 1) * H + h, mask=valid_next, other=0.0)
        p_n = tl.sigmoid(tl.load(trap_ptr + (t + 1) * H + h, mask=valid_next, other=0.0).to(tl.float32))
        gamma = dt * p
        scale = gamma + dt_n * (1.0 - p_n)
        ell = tl.cumsum(adt, axis=0)
        ell_end = tl.sum(tl.where(rows == CHUNK_ - 1, ell, 0.0), axis=0)

        # F1, F2: Phi in fp32
        ang = tl.load(ang_ptr + t[:, None] * (H * NA) + h * NA + acols[None, :], mask=vmask, other=0.0)
        theta = 3.141592653589793 * (1.0 - 2.0 / (tl.exp(2.0 * ang.to(tl.float32)) + 1.0))  # pi * tanh
        csum = tl.cumsum(theta * dt[:, None], axis=0)
        phi = _fwd_wrap_angle(carry[None, :] + csum)
        carry = _fwd_wrap_angle(carry + _fwd_last_row(csum, rows, CHUNK_))
        cos = tl.cos(phi)
        sin = tl.sin(phi)

        # F3, F4: biased q/k (fp32), rotated half and pass-through half
        qrow = q_ptr + t[:, None] * N
        krow = k_ptr + t[:, None] * N
        q_r = tl.load(qrow + cols[None, :], mask=vmask, other=0.0).to(tl.float32) + qb_r[None, :]
        q_p = tl.load(qrow + HALF + cols[None, :], mask=vmask, other=0.0).to(tl.float32) + qb_p[None, :]
        k_r = tl.load(krow + cols[None, :], mask=vmask, other=0.0).to(tl.float32) + kb_r[None, :]
        k_p = tl.load(krow + HALF + cols[None, :], mask=vmask, other=0.0).to(tl.float32) + kb_p[None, :]
        qk = tl.sum(q_r * k_r, axis=1) + tl.sum(q_p * k_p, axis=1)  # unrotated q^.k^ (spec §9.2)
        kt_r = _fwd_rotate_pairs(k_r, cos, sin, CHUNK_, NA)
        # rotated q and scaled k go through this program's fp32 scratch (L2-resident) instead of staying live in
        # registers: the dots then read them from memory, which keeps the loop body from spilling.
        tl.store(scr_tile, _fwd_rotate_pairs(q_r, cos, sin, CHUNK_, NA))
        tl.store(scr_tile + HALF, q_p)
        tl.store(scr_tile + CHUNK_ * N, kt_r * scale[:, None])
        tl.store(scr_tile + CHUNK_ * N + HALF, k_p * scale[:, None])

        # final states of the sequence: the row of its last token (only in its last chunk)
        last = (t == end - 1)[:, None]
        head_seq = seq * H + h
        tl.store(fangle_ptr + head_seq * NA + acols[None, :] + rows[:, None] * 0, phi, mask=last & lead)
        tl.store(fk_ptr + head_seq * N + cols[None, :] + rows[:, None] * 0, kt_r, mask=last & lead)
        tl.store(fk_ptr + head_seq * N + HALF + cols[None, :] + rows[:, None] * 0, k_p, mask=last & lead)
        if SAVE:
            tl.store(phi_ptr + t[:, None] * (H * NA) + h * NA + acols[None, :], phi, mask=vmask & lead)
        tl.debug_barrier()  # scratch written by all threads before any thread reads it

        # §4: strict-causal intra-chunk scores, inter-chunk readout, gamma diagonal + D skip
        q_rot = tl.load(scr_full)
        k_scaled = tl.load(scr_full + CHUNK_ * N)
        tv_off = t[:, None] * (H * P) + h * P + pcols[None, :]
        vals = tl.load(v_ptr + tv_off, mask=vmask, other=0.0)
        v = vals.to(tl.float32)
        scores = tl.dot(q_rot, tl.trans(k_scaled), input_precision=PRECISION)
        decay = tl.exp(tl.minimum(ell[:, None] - ell[None, :], 0.0))
        scores = tl.where(rows[:, None] > rows[None, :], scores * decay, 0.0)
        readout = tl.dot(q_rot, tl.trans(state), input_precision=PRECISION)
        y = tl.dot(scores, v, input_precision=PRECISION) + tl.exp(ell)[:, None] * readout
        y += (d_h + gamma * qk)[:, None] * v

        # F8 gate
        zg = tl.load(z_ptr + tv_off, mask=vmask, other=0.0).to(tl.float32)
        tl.store(out_ptr + tv_off, (y * zg * tl.sigmoid(zg)).to(out_ptr.dtype.element_ty), mask=vmask)
        tl.store(fv_ptr + head_seq * P + pcols[None, :] + rows[:, None] * 0, vals, mask=last)
        if SAVE:
            tl.store(y_ptr + tv_off, y, mask=vmask)
            tl.store(states_ptr + ((state_base + c) * H + h) * (P * N) + st_tile, state)

        # §4 state passing: S <- e^Lambda S + (diag(e^{Lambda - ell}) V)^T Ks
        vd = v * tl.exp(ell_end - ell)[:, None]
        state = tl.dot(tl.trans(vd), k_scaled, state * tl.exp(ell_end), input_precision=PRECISION)
        tl.debug_barrier()  # all reads of the scratch done before the next chunk overwrites it
        c += 1

    tl.store(fssm_ptr + (seq * H + h) * (P * N) + st_tile, state)


def mamba3_siso_fwd(q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens, *, save_for_backward=True,
                    config: Mamba3FwdConfig = DEFAULT_FWD_CONFIG):
    """Mamba-3 SISO varlen forward with Triton (spec §3, §4), no host synchronisation.

    Inputs (project layout, contiguous, one device): q, k (T, 1, 128) bf16; v, z (T, 32, 64) bf16; adt, dt (T, 32)
    fp32; trap (T, 32) bf16; q_bias, k_bias (32, 128) fp32; angles (T, 32, 32) bf16; d (32,) fp32; cu_seqlens
    (S+1,) int32 starting at 0, strictly increasing, ending at T. Shapes, dtypes, devices and contiguity are checked
    (TypeError/ValueError); the cu_seqlens values are not (that needs a host sync: see validate_cu_seqlens).
    Returns (out (T, 32, 64) bf16, final_angle (S, 32, 32) fp32, final_ssm (S, 32, 64, 128) fp32,
    final_k (S, 32, 128) fp32, final_v (S, 32, 64) bf16, saved): saved is a Mamba3FwdSaved, or None when
    save_for_backward is False (then y, phi and the chunk states are not written at all).
    """
    validate_inputs(q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens, check_cu_seqlens_values=False)
    for name, x in zip(INPUT_NAMES, (q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens)):
        if not x.is_contiguous():
            raise ValueError(f"{name}: expected a contiguous tensor (the kernel assumes the packed layout)")
    T, S, dev = q.shape[0], cu_seqlens.numel() - 1, q.device
    bf16, f32 = torch.bfloat16, torch.float32
    if HEADDIM % config.block_p != 0:
        raise ValueError(f"config.block_p: expected a divisor of {HEADDIM}, got {config.block_p}")

    out = torch.empty((T, NHEADS, HEADDIM), dtype=bf16, device=dev)
    final_angle = torch.empty((S, NHEADS, NANGLES), dtype=f32, device=dev)
    final_ssm = torch.empty((S, NHEADS, HEADDIM, DSTATE), dtype=f32, device=dev)
    final_k = torch.empty((S, NHEADS, DSTATE), dtype=f32, device=dev)
    final_v = torch.empty((S, NHEADS, HEADDIM), dtype=bf16, device=dev)
    if save_for_backward:
        saved = Mamba3FwdSaved(
            y=torch.empty((T, NHEADS, HEADDIM), dtype=f32, device=dev),
            phi=torch.empty((T, NHEADS, NANGLES), dtype=f32, device=dev),
            chunk_states=torch.empty((T // CHUNK + S, NHEADS, HEADDIM, DSTATE), dtype=f32, device=dev),
        )
        y_buf, phi_buf, states_buf = saved
    else:
        saved = None
        y_buf = phi_buf = states_buf = out  # never written: SAVE is False
    grid = (NHEADS * (HEADDIM // config.block_p), S)
    scratch = torch.empty((S * grid[0], 2, CHUNK, DSTATE), dtype=f32, device=dev)  # per program [q_rot, k_scaled]
    _mamba3_siso_fwd_kernel[grid](
        q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens,
        out, final_angle, final_ssm, final_k, final_v, y_buf, phi_buf, states_buf, scratch,
        H=NHEADS, N=DSTATE, P=HEADDIM, NA=NANGLES, CHUNK_=CHUNK, BLOCK_P=config.block_p,
        SAVE=save_for_backward, PRECISION=config.input_precision, num_warps=config.num_warps,
    )
    return out, final_angle, final_ssm, final_k, final_v, saved
