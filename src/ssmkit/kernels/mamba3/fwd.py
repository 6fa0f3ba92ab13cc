# Mamba-3 SISO varlen forward (spec §3 F1-F8, chunked per §4) in four launches (five with a side stream), SSD-style,
# so that only light elementwise passes are sequential over chunks:
#   1. chunk state, grid (chunk slots, H): per 64-token chunk and head, the chunk's own state contribution in the
#      chunk's angle frame, dS_loc = V^T diag(e^{Lambda - ell}) (s * R(csum) k^) (64 x 128), where csum is the
#      in-chunk cumsum of theta*dt; plus Lambda, csum itself (read by 2, 2' and 3: its row at the chunk's last token is
#      the chunk's angle sum) and its per-token scalars (ell, gamma, s: read by 4 and by the backward's intra kernel
#      instead of recomputed).
#   2. state passing, grid (H * 64 / BLOCK_P, S): walks each sequence's chunks in order, rotates dS_loc into the
#      global frame (R(carry) on every row: k~ = R(carry + csum) k^ = R(carry) R(csum) k^), stores the state ENTERING
#      each chunk (and, on one stream, the carry entering it), S <- e^Lambda S + dS, carry <- wrap(carry + angle
#      sum); final_ssm.
#   2'. angle carry, grid (S, H), only with a side stream (``mamba3_siso_fwd``'s ``rotate_stream``): the same carry
#      walk alone (its angle sums: launch 1's csum rows), storing the carry entering each chunk for 3, so that 3
#      needs nothing from 2 and runs beside it there (the same bits as 2's stored carry).
#   3. rotate, grid (chunk slots, H): launch 1's csum plus the carry (2's or 2''s), Phi = wrap(carry + csum),
#      rotation of q/k (pairs (2m, 2m+1) of dims 0..63 by Phi[m], dims 64..127 pass through); stores q~/k~ (read by
#      4, saved for the backward), q^.k^, cos/sin of Phi (saved) and the final angle/k.
#   4. chunk scan, grid (chunk slots, H): strict-causal scores, readout from the entering state, gamma diagonal + D
#      skip, silu(z) gate from q~/k~; the output, y (saved; or, given dout, the gate's gradient dz instead) and
#      the final v.
#   (3 and 4 were one kernel until session 6: 255 registers with spills at 8 warps; split, 0.190 -> 0.134 ms at c1,
#   same bits, bench/mamba3/NOTES.md "Session 6".)
# Chunk slots: sequence s, local chunk c -> slot cu_seqlens[s] // 64 + s + c < T // 64 + S (no host sync); programs of
# unused slots exit. Tiles: 64 tokens x 128 state dims (as a rotated and a pass-through 64-wide half) x 64 values.
# All arithmetic fp32. The scan's scores and readout dots take fp32 operands at Mamba3FwdConfig.input_precision; the
# dots whose B operand wgmma would need transposed (the chunk state's two, the scan's scores V) take an fp32 operand
# split into two bf16 halves (`_m3_dot`, Mamba3FwdConfig.transposed_precision): rotated q/k and scaled k never go to
# a single bf16. Deterministic: no atomics.
import contextlib
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from ssmkit.kernels.common.mapped_io import posted_pointer
from ssmkit.kernels.common.pdl import pdl_applies, pdl_launch_dependents
from ssmkit.kernels.mamba3.dots import _m3_dot
from ssmkit.mamba3.shapes import CHUNK, DSTATE, HEADDIM, INPUT_NAMES, NANGLES, NHEADS
from ssmkit.mamba3.validate import validate_inputs

_FWD_TWO_PI = tl.constexpr(6.283185307179586)
_FWD_PI = tl.constexpr(3.141592653589793)
_FWD_TWO_OVER_PI = tl.constexpr(0.6366197466850281)


class Mamba3FwdConfig(NamedTuple):
    """Launch configuration of the forward kernels (see bench/mamba3/NOTES.md `## Forward`; the angle-carry kernel,
    one warp per (sequence, head), has none).

    chunk_warps, rotate_warps, scan_warps: warps per program of the chunk-state, rotate and chunk-scan kernels
    (H200, c1, NOTES "Session 6": rotate 0.062 ms at 8 warps vs 0.090 at 4; scan 0.071 at 4 vs 0.101 at 8; chunk
    state at 4 since session 22: c1 0.043 ms vs 0.048 at 8, c4 0.045 vs 0.051, under the 128 cap then, the same bits
    (in session 6, at more registers: c1 0.049 vs 0.055, c4 0.061 vs 0.055); the results do not depend on them);
    passing_block_p / passing_warps: value rows per program and warps of the state-passing kernel; input_precision:
    tl.dot precision of the scan's scores and readout dots ("tf32", "tf32x3" or "ieee"); transposed_precision: the same,
    or "bf16x3" (`_m3_dot`: the fp32 operand split into bf16 halves), for the dots whose B operand is N-contiguous,
    which wgmma would read transposed (the chunk state's V^T (decay o Ks), the scan's scores V; H200, session 23: chunk
    state c1 0.032 ms vs 0.041 at tf32, scan 0.048 vs 0.050; final_ssm's error vs float64 7.1e-4 -> 4.9e-6);
    rotate_maxnreg: register cap of the rotate kernel (0: none; CUDA only): 128 keeps two 8-warp programs per SM, which
    the build without a cap (147 registers, since ``_fwd_sincos``; at most 2 spill instructions with the cap:
    bench/sass_stats.py) would not; H200, NOTES "Session 18": c1 0.028 ms capped vs 0.029 uncapped, c4 0.029 vs
    0.031); scan_maxnreg: the chunk scan's (168: three 4-warp programs per SM, where the build
    without a cap takes 172 registers since it reads the chunk scalars, session 15; with the split-bf16 scores V, 20
    spill instructions at 168, and still 0.048 ms at c1 against 0.055-0.056 uncapped or at 184, session 23);
    chunk_maxnreg: the chunk-state kernel's (128 since session 39: a graph's build, which reads its inputs at posted
    addresses, takes 140 registers uncapped (the direct build 127), 127 capped with no spills; H100, graph, same
    process, median of 6 rounds in alternating order: queued -5 to -6 us per call at c3 / c4 / c7, within +-2 us at
    the other visible cases, the same bits; 96 (68 spill instructions) level or slower; bench/mamba3/NOTES.md
    "Session 39". History: 0 from session 22, when at 4 warps the build took 146 registers and capped at 128 spilled
    58 instructions (c1 0.043 ms against 0.037 uncapped); session 23's split-bf16 dots brought it to 128 uncapped).
    """

    chunk_warps: int = 4
    rotate_warps: int = 8
    scan_warps: int = 4
    passing_block_p: int = 16
    passing_warps: int = 4
    # H200, v1 kernel (every dot tf32): out 1.84e-3, final_ssm 7.1e-4 vs fp64 (tf32x3: 2.3x slower)
    input_precision: str = "tf32"
    transposed_precision: str = "bf16x3"
    rotate_maxnreg: int = 128
    scan_maxnreg: int = 168
    chunk_maxnreg: int = 128


DEFAULT_FWD_CONFIG = Mamba3FwdConfig()


class Mamba3FwdSaved(NamedTuple):
    """Tensors the forward keeps for the backward (T4b reads this).

    y: (T, 32, 64) fp32, pre-gate output (spec F7); None when the forward wrote the gate's gradient dz itself
        (``mamba3_siso_fwd(gate_grad=...)``).
    cos_phi, sin_phi: (T, 32, 32) fp32, cos and sin of Phi_t = wrap(cumsum(pi * tanh(angles) * dt)) in [0, 2pi)
        (spec F2, fp32 cumsum), the rotation of F4 (the backward reads them instead of evaluating cos and sin again
        five times per chunk: bench/mamba3/NOTES.md "Session 4").
    chunk_states: (T // 64 + S, 32, 64, 128) fp32, the (v, qk)-ordered SSM state ENTERING each chunk; sequence s,
        chunk c (local tokens 64c .. 64c+63) is at index cu_seqlens[s] // 64 + s + c. Indices no chunk maps to are
        left unwritten (torch.empty).
    q_rot, k_rot: (T, 32, 64) fp32, dims 0..63 of q~ and k~ per value head: biased (F3) and rotated by Phi (F4), as
        the forward's dots use them (the backward loads them instead of rebuilding them from q, k, the biases and
        cos / sin in every kernel: bench/mamba3/NOTES.md "Session 5"). Dims 64..127 are only biased: every kernel
        forms them from q, k (one head, in L2) and the bias (``_fwd_tilde_half``), the same bits as stored ones
        (until session 8 they were stored too: 36 MB more written and read per pass at T = 2184).
    chunk_scalars: (T // 64 + S, 32, 3, 64) fp32, per chunk slot and head the chunk's per-token ell (in-chunk cumsum
        of adt, F6), gamma and scale s (F5) as ``_fwd_chunk_scalars`` gives them (zero gamma and s past the
        sequence end), slots as chunk_states (unwritten where no chunk maps): the chunk scan and the backward's
        intra kernel read them instead of recomputing them (the cumsum and the sigmoids were ~11 % of the scan's
        SASS instructions, bench/mamba3/NOTES.md "Session 15").
    masked_scores: (T // 64 + S, 32, 64, 64) fp32, per chunk slot and head the chunk scan's strictly causal
        decay o A (A = Q~ Ks^T, decay_ij = e^{min(ell_i - ell_j, 0)}; zero on and above the diagonal and in rows
        and columns past the sequence end), slots as chunk_states: the backward's intra kernel uses its scores only
        in this form, and loads them instead of forming them again (bench/mamba3/NOTES.md "Session 27").
    qk: (T, 32) fp32, the unrotated q^.k^ per token and head (spec §9.2) as the rotate kernel formed it.
    """

    y: torch.Tensor | None
    cos_phi: torch.Tensor
    sin_phi: torch.Tensor
    chunk_states: torch.Tensor
    q_rot: torch.Tensor
    k_rot: torch.Tensor
    chunk_scalars: torch.Tensor
    masked_scores: torch.Tensor
    qk: torch.Tensor


class Posted(NamedTuple):
    """Tensors a graph's kernels read or write at addresses posted per replay instead of in static buffers (no copy
    launch for them; ssmkit.mamba3.graph): ``stash`` the MappedIO stash (device int64), ``words`` the stash word of
    each such tensor by name ("v", "z", "dout", "angles", "dfinal_ssm" read; "out", "dv", "dz", "dangles",
    "final_ssm" and the finish kernel's other gradients written)."""

    stash: torch.Tensor
    words: dict


def posted_kwargs(posted: Posted | None, fallback: torch.Tensor, *names: str) -> dict:
    """Launch keywords for a kernel's posted pointers: ``io_ptr`` (the stash, or ``fallback``, never read, without
    a Posted) and ``NAME_WORD`` per name in upper case (-1: the pointer argument itself)."""
    words = posted.words if posted is not None else {}
    kwargs = {"io_ptr": posted.stash if posted is not None else fallback}
    kwargs.update({f"{n.upper()}_WORD": words.get(n, -1) for n in names})
    return kwargs


@triton.jit
def _fwd_wrap_angle(x):
    """x - 2pi * floor(x / 2pi), into [0, 2pi) (spec F2)."""
    return x - _FWD_TWO_PI * tl.floor(x / _FWD_TWO_PI)


@triton.jit
def _fwd_angle_sum(csum_ptr, start, end, c, h, m, H: tl.constexpr, NA: tl.constexpr, CHUNK_: tl.constexpr):
    """The angle sum of local chunk c of the sequence [start, end) on the pair indices m (those >= NA read 0): the
    in-chunk cumsum's row at the chunk's last token (``csum``, the chunk-state kernel's; until session 17 that kernel
    also stored the sum apart, a cross-warp row extraction)."""
    last = tl.minimum(start + (c + 1) * CHUNK_, end) - 1
    return tl.load(csum_ptr + (last * H + h) * NA + m, mask=m < NA, other=0.0)


@triton.jit
def _fwd_angle_carry_step(carry, angle_sum):
    """The angle carry past one more chunk, wrap(carry + the chunk's angle sum) (F2; `_fwd_angle_sum`). The
    state-passing and angle-carry kernels both walk a sequence's chunks with it, the same operations in the same
    order, so their carries are bit-identical."""
    return _fwd_wrap_angle(carry + angle_sum)


@triton.jit
def _fwd_sincos(x):
    """(sin x, cos x) in fp32 for the rotation angles (F4), without libdevice's slow path: x = k pi/2 + r with
    |r| <= pi/4, then two polynomials in r^2 and the quadrant k mod 4.

    Reduction: pi/2 as three fp32 parts of 12, 12 and 24 significant bits, so k times either of the first two is
    exact for |k| < 4096 and the result does not depend on whether the compiler fuses the multiply-adds (the
    interpreter does not): within 1.2e-7 of float64 sin / cos of the fp32 argument for |x| < 6400, and within ~0.5
    ulp of x beyond (measured to 1e6), the rounding an fp32 angle that large carries anyway. The angles here: Phi
    and the carry in [0, 2 pi); in-chunk sums of at most 64 terms |theta dt| < pi dt. Polynomials: near-minimax fits
    for relative error on [0, pi/4] of (sin r - r) / r^3 and (cos r - 1 + r^2 / 2) / r^4, made for this kernel
    (Lawson-weighted least squares in float64; in fp32 at most 0.74 and 1.2 ulp on that range).
    Why not tl.sin / tl.cos: libdevice's sinf / cosf are as accurate but carry a Payne-Hanek reduction for huge
    arguments that never runs here, and it cost the instruction-latency-bound forward kernels registers, spills
    and instructions (rotate kernel reading the carry, 8 warps, sm_90 build by bench/sass_stats.py: 4032 -> 2528
    SASS, 120 -> 0 spill instructions; state passing's chain loop 445 -> 161 per chunk). The official kernels use
    the PTX approximations (spec §0 [UTIL]), less accurate than either. tests/mamba3/test_sincos.py checks the
    bounds."""
    k = tl.floor(x * _FWD_TWO_OVER_PI + 0.5)
    r = x - k * 1.57080078125
    r = r - k * -4.453584551811218e-06
    r = r - k * -8.705515752716053e-10
    z = r * r
    s = r + (r * z) * (-0.16666655242443085 + z * (0.00833216030150652 + z * -0.0001951528392964974))
    c = (1.0 - 0.5 * z) + (z * z) * (0.04166664555668831 + z * (-0.0013887316454201937 + z * 2.44331567955669e-05))
    q = k.to(tl.int32) & 3
    odd = (q & 1) == 1
    sin = tl.where(odd, c, s)
    cos = tl.where(odd, s, c)
    return tl.where((q & 2) == 2, -sin, sin), tl.where(((q + 1) & 2) == 2, -cos, cos)


@triton.jit
def _fwd_rotate_pairs(x, cos, sin, ROWS: tl.constexpr, PAIRS: tl.constexpr):
    """Rotate the adjacent pairs (2m, 2m+1) of x (ROWS, 2 PAIRS) by angle m: (x0 c - x1 s, x0 s + x1 c) (spec F4)."""
    x0, x1 = tl.split(tl.reshape(x, (ROWS, PAIRS, 2)))
    return tl.reshape(tl.join(x0 * cos - x1 * sin, x0 * sin + x1 * cos), (ROWS, 2 * PAIRS))


@triton.jit
def _fwd_locate_chunk(cu_ptr, slot, S, BLOCK_S: tl.constexpr, CHUNK_: tl.constexpr):
    """(sequence, start, end, local chunk) of a chunk slot (slot = cu[s] // CHUNK_ + s + c); the chunk is past the
    sequence's end (c >= its chunk count) when no chunk maps to the slot."""
    idx = tl.arange(0, BLOCK_S)
    cu = tl.load(cu_ptr + idx, mask=idx <= S, other=0)
    first = cu // CHUNK_ + idx  # first slot of each sequence, strictly increasing
    seq = tl.sum(((first <= slot) & (idx < S)).to(tl.int32), axis=0) - 1
    start = tl.sum(tl.where(idx == seq, cu, 0), axis=0)
    end = tl.sum(tl.where(idx == seq + 1, cu, 0), axis=0)
    return seq, start, end, slot - (start // CHUNK_ + seq)


@triton.jit
def _fwd_chunk_scalars(adt_ptr, dt_ptr, trap_ptr, t, h, end, H: tl.constexpr):
    """Per-token terms of one chunk and head (zero past the sequence end): (ell = in-chunk cumsum of adt (F6), gamma,
    scale s = gamma + gamma' (F5; the shifted term stops at the sequence end, not the chunk end, spec §9.6), dt)."""
    valid = t < end
    valid_next = (t + 1) < end
    adt = tl.load(adt_ptr + t * H + h, mask=valid, other=0.0)
    dt = tl.load(dt_ptr + t * H + h, mask=valid, other=0.0)
    p = tl.sigmoid(tl.load(trap_ptr + t * H + h, mask=valid, other=0.0).to(tl.float32))
    dt_n = tl.load(dt_ptr + (t + 1) * H + h, mask=valid_next, other=0.0)
    p_n = tl.sigmoid(tl.load(trap_ptr + (t + 1) * H + h, mask=valid_next, other=0.0).to(tl.float32))
    gamma = dt * p
    return tl.cumsum(adt, axis=0), gamma, gamma + dt_n * (1.0 - p_n), dt


@triton.jit
def _fwd_angle_cumsum(ang_ptr, dt, t, h, valid, H: tl.constexpr, NA: tl.constexpr):
    """(CHUNK, NA) in-chunk inclusive cumsum of theta * dt, theta = pi * tanh(angles) (F1, F2 without the carry)."""
    acols = tl.arange(0, NA)
    ang = tl.load(ang_ptr + t[:, None] * (H * NA) + h * NA + acols[None, :], mask=valid[:, None], other=0.0)
    theta = _FWD_PI * (1.0 - 2.0 / (tl.exp(2.0 * ang.to(tl.float32)) + 1.0))
    return tl.cumsum(theta * dt[:, None], axis=0)


@triton.jit
def _fwd_load_biased_half(x_ptr, bias_ptr, t, h, valid, half, N: tl.constexpr):
    """Dims [half * N/2, half * N/2 + N/2) of q^ or k^ (F3) of one chunk for value head h: (CHUNK, N/2) fp32."""
    cols = half * (N // 2) + tl.arange(0, N // 2)
    x = tl.load(x_ptr + t[:, None] * N + cols[None, :], mask=valid[:, None], other=0.0).to(tl.float32)
    return x + tl.load(bias_ptr + h * N + cols)[None, :]


@triton.jit
def _fwd_tilde_half(xr_ptr, x_ptr, bias_ptr, t, h, valid, half, H: tl.constexpr, N: tl.constexpr):
    """q~ or k~ of one chunk for value head h on the dims [half * N/2, half * N/2 + N/2): (CHUNK, N/2) fp32, zero on
    invalid rows. Half 0 (rotated): the rotate kernel's stored tile (xr: (T, H, N/2) fp32, ``Mamba3FwdSaved.q_rot``
    / ``k_rot``); half 1 (biased only): formed from x (T, 1, N) and the bias. Callers pass ``half`` as a constexpr
    (a run-time half merges both halves' tiles and layouts through register moves and layout conversions, as the
    side kernels and the state-gradient chain did until session 17)."""
    if half == 0:
        cols = tl.arange(0, N // 2)
        tile = tl.load(xr_ptr + t[:, None] * (H * (N // 2)) + h * (N // 2) + cols[None, :], mask=valid[:, None],
                       other=0.0)
    else:
        tile = tl.where(valid[:, None], _fwd_load_biased_half(x_ptr, bias_ptr, t, h, valid, 1, N), 0.0)
    return tile


@triton.jit
def _mamba3_fwd_chunk_state_kernel(
    k_ptr, v_ptr, adt_ptr, dt_ptr, trap_ptr, kb_ptr, ang_ptr, cu_ptr, S, dstate_ptr, decay_ptr, scal_ptr,
    csum_ptr, io_ptr,
    H: tl.constexpr, N: tl.constexpr, P: tl.constexpr, NA: tl.constexpr, CHUNK_: tl.constexpr,
    BLOCK_S: tl.constexpr, TPREC: tl.constexpr, V_WORD: tl.constexpr, ANGLES_WORD: tl.constexpr,
    K_WORD: tl.constexpr, ADT_WORD: tl.constexpr, DT_WORD: tl.constexpr, TRAP_WORD: tl.constexpr,
    K_BIAS_WORD: tl.constexpr, CU_SEQLENS_WORD: tl.constexpr,
):
    """Grid (chunk slots, H): launch 1 of the forward (the module header). Every input may be read at its posted
    address (*_WORD >= 0): in a graph this kernel, the first after the table fetch, then does not wait for the copy
    of the small arguments into their static buffers, which runs beside it (ssmkit.mamba3.graph)."""
    v_ptr = posted_pointer(v_ptr, io_ptr, V_WORD)
    ang_ptr = posted_pointer(ang_ptr, io_ptr, ANGLES_WORD)
    k_ptr = posted_pointer(k_ptr, io_ptr, K_WORD)
    adt_ptr = posted_pointer(adt_ptr, io_ptr, ADT_WORD)
    dt_ptr = posted_pointer(dt_ptr, io_ptr, DT_WORD)
    trap_ptr = posted_pointer(trap_ptr, io_ptr, TRAP_WORD)
    kb_ptr = posted_pointer(kb_ptr, io_ptr, K_BIAS_WORD)
    cu_ptr = posted_pointer(cu_ptr, io_ptr, CU_SEQLENS_WORD)
    slot = tl.program_id(0)
    h = tl.program_id(1)
    seq, start, end, c = _fwd_locate_chunk(cu_ptr, slot, S, BLOCK_S, CHUNK_)
    if c < tl.cdiv(end - start, CHUNK_):
        rows = tl.arange(0, CHUNK_)
        t = start + c * CHUNK_ + rows
        valid = t < end
        ell, gamma, scale, dt = _fwd_chunk_scalars(adt_ptr, dt_ptr, trap_ptr, t, h, end, H)
        srow = scal_ptr + (slot * H + h) * 3 * CHUNK_ + rows
        tl.store(srow, ell)
        tl.store(srow + CHUNK_, gamma)
        tl.store(srow + 2 * CHUNK_, scale)
        ell_end = tl.sum(tl.where(rows == CHUNK_ - 1, ell, 0.0), axis=0)
        csum = _fwd_angle_cumsum(ang_ptr, dt, t, h, valid, H, NA)
        tl.store(csum_ptr + t[:, None] * (H * NA) + h * NA + tl.arange(0, NA)[None, :], csum, mask=valid[:, None])
        k_r = _fwd_load_biased_half(k_ptr, kb_ptr, t, h, valid, 0, N)
        k_p = _fwd_load_biased_half(k_ptr, kb_ptr, t, h, valid, 1, N)
        sin_c, cos_c = _fwd_sincos(csum)
        # V^T diag(e^{Lambda - ell}) Ks: the decay goes on the k side with the scale s (one per-token factor), so
        # that V^T (bf16, exact) is the A operand as it is and only the (tokens, N/2) k tiles, N-contiguous B
        # operands, are split (TPREC "bf16x3")
        sw = (scale * tl.exp(ell_end - ell))[:, None]
        pcols = tl.arange(0, P)
        vt = tl.trans(tl.load(v_ptr + t[:, None] * (H * P) + h * P + pcols[None, :], mask=valid[:, None], other=0.0))
        cols = tl.arange(0, N // 2)
        out = dstate_ptr + (slot * H + h) * (P * N) + pcols[:, None] * N + cols[None, :]
        tl.store(out, _m3_dot(vt, _fwd_rotate_pairs(k_r, cos_c, sin_c, CHUNK_, NA) * sw, TPREC))
        tl.store(out + N // 2, _m3_dot(vt, k_p * sw, TPREC))
        tl.store(decay_ptr + slot * H + h, ell_end)


@triton.jit
def _mamba3_fwd_state_passing_kernel(
    cu_ptr, dstate_ptr, decay_ptr, csum_ptr, states_ptr, carry_ptr, fssm_ptr, io_ptr,
    H: tl.constexpr, N: tl.constexpr, P: tl.constexpr, NA: tl.constexpr, CHUNK_: tl.constexpr,
    BLOCK_P: tl.constexpr, FINAL_SSM_WORD: tl.constexpr, STORE_CARRY: tl.constexpr,
):
    """Grid (H * P / BLOCK_P, S): launch 2 (the file's header). STORE_CARRY: also store the angle carry entering each
    chunk, (chunk slots, H, NA), for a rotate kernel launched after it on the same stream (the one-stream forward,
    which so needs no angle-carry launch); a forward with a side stream runs `_mamba3_fwd_angle_carry_kernel` there
    instead, the same bits."""
    fssm_ptr = posted_pointer(fssm_ptr, io_ptr, FINAL_SSM_WORD)
    NPB: tl.constexpr = P // BLOCK_P
    pid = tl.program_id(0)
    seq = tl.program_id(1)
    h = pid // NPB
    start = tl.load(cu_ptr + seq)
    end = tl.load(cu_ptr + seq + 1)
    pairs = tl.arange(0, N // 2)
    tile = ((pid % NPB) * BLOCK_P + tl.arange(0, BLOCK_P))[:, None] * N + tl.arange(0, N)[None, :]
    state = tl.zeros((BLOCK_P, N), dtype=tl.float32)
    carry = tl.zeros((N // 2,), dtype=tl.float32)  # angle of each dim pair; pairs >= NA stay 0 (pass through)
    first_slot = start // CHUNK_ + seq
    nchunks = tl.cdiv(end - start, CHUNK_)
    # (every sequence holds at least one token, cu_seqlens strictly increasing as validate_cu_seqlens checks: the
    # first loads assume it)
    # each chunk's three loads are issued one chunk ahead (a hand-made one-stage pipeline, as the backward's chain):
    # the loop is a chain of dependent steps whose only long latencies are these loads
    dstate_n = tl.load(dstate_ptr + (first_slot * H + h) * (P * N) + tile)
    decay_n = tl.load(decay_ptr + first_slot * H + h)
    asum_n = _fwd_angle_sum(csum_ptr, start, end, 0, h, pairs, H, NA, CHUNK_)
    for c in range(0, nchunks):
        head_slot = (first_slot + c) * H + h
        dstate, decay, asum = dstate_n, decay_n, asum_n
        more = c + 1 < nchunks
        dstate_n = tl.load(dstate_ptr + (head_slot + H) * (P * N) + tile, mask=more, other=0.0)
        decay_n = tl.load(decay_ptr + head_slot + H, mask=more, other=0.0)
        asum_n = _fwd_angle_sum(csum_ptr, start, end, tl.minimum(c + 1, nchunks - 1), h, pairs, H, NA, CHUNK_)
        tl.store(states_ptr + head_slot * (P * N) + tile, state)
        if STORE_CARRY:
            tl.store(carry_ptr + head_slot * NA + pairs, carry, mask=(pairs < NA) & (pid % NPB == 0))
        sin_c, cos_c = _fwd_sincos(carry)
        dstate = _fwd_rotate_pairs(dstate, cos_c[None, :], sin_c[None, :], BLOCK_P, N // 2)
        state = state * tl.exp(decay) + dstate
        carry = _fwd_angle_carry_step(carry, asum)
    tl.store(fssm_ptr + (seq * H + h) * (P * N) + tile, state)


@triton.jit
def _mamba3_fwd_angle_carry_kernel(cu_ptr, csum_ptr, carry_ptr, H: tl.constexpr, NA: tl.constexpr,
                                   CHUNK_: tl.constexpr):
    """Grid (S, H): the angle carry entering each chunk of sequence s, head h (the wrapped angle sum of its earlier
    chunks, F2), walked over the sequence's chunks in order by `_fwd_angle_carry_step` from the chunk-state kernel's
    angle sums, as the state passing walks it for the state (same operations in the same order: the same bits);
    stored (chunk slots, H, NA) fp32 for the rotate kernel, as the passing stores it on one stream. O(chunks) per
    sequence and independent of the passing, so that with a side stream the rotate kernel runs beside the passing at
    any length. (Until session 44 the rotate kernel walked the carry itself there, chunk c summing c rows, quadratic
    in a sequence's chunk count, so it did only up to 3072 tokens and read the passing's stored carry beyond, after
    the passing: bench/mamba3/NOTES.md "Session 44".)"""
    seq = tl.program_id(0)
    h = tl.program_id(1)
    start = tl.load(cu_ptr + seq)
    end = tl.load(cu_ptr + seq + 1)
    m = tl.arange(0, NA)
    first_slot = start // CHUNK_ + seq
    nchunks = tl.cdiv(end - start, CHUNK_)
    carry = tl.zeros((NA,), dtype=tl.float32)
    asum_n = _fwd_angle_sum(csum_ptr, start, end, 0, h, m, H, NA, CHUNK_)  # (issued a chunk ahead, as the passing)
    for c in range(0, nchunks):
        asum = asum_n
        asum_n = _fwd_angle_sum(csum_ptr, start, end, tl.minimum(c + 1, nchunks - 1), h, m, H, NA, CHUNK_)
        tl.store(carry_ptr + ((first_slot + c) * H + h) * NA + m, carry)
        carry = _fwd_angle_carry_step(carry, asum)


@triton.jit
def _mamba3_fwd_rotate_kernel(
    q_ptr, k_ptr, qb_ptr, kb_ptr, csum_ptr, cu_ptr, S, carry_ptr, fangle_ptr, fk_ptr, qk_ptr,
    cos_ptr, sin_ptr, qrot_ptr, krot_ptr,
    H: tl.constexpr, N: tl.constexpr, NA: tl.constexpr, CHUNK_: tl.constexpr, BLOCK_S: tl.constexpr,
    SAVE: tl.constexpr,
):
    """Grid (chunk slots, H): the elementwise half of the chunk scan. The carry (the wrapped angle sum of the sequence's
    earlier chunks, the state passing's or `_mamba3_fwd_angle_carry_kernel`'s) plus csum: Phi = wrap(carry + csum) (F2;
    csum, the in-chunk angle cumsum, as the chunk-state kernel stored it: its tanh and cumsum were ~30 % of this
    kernel's SASS instructions until session 15), the biased q^, k^ (F3) and their rotation (F4, pairs (2m, 2m+1) of
    dims 0..63 by Phi[m], dims 64..127 pass through): stores dims 0..63 of q~ and k~ (fp32, (T, H, N/2); read by the
    scan kernel, and kept for the backward; the pass-through dims are formed where they are needed,
    ``_fwd_tilde_half``), the unrotated q^.k^ (spec §9.2, fp32 (T, H)), cos / sin of Phi when SAVE, and the final angle
    and final k (the sequence's last token, in its last chunk)."""
    HALF: tl.constexpr = N // 2
    slot = tl.program_id(0)
    h = tl.program_id(1)
    seq, start, end, c = _fwd_locate_chunk(cu_ptr, slot, S, BLOCK_S, CHUNK_)
    if c < tl.cdiv(end - start, CHUNK_):
        rows = tl.arange(0, CHUNK_)
        cols = tl.arange(0, HALF)
        acols = tl.arange(0, NA)
        t = start + c * CHUNK_ + rows
        valid = t < end
        vmask = valid[:, None]
        t_a = t[:, None] * (H * NA) + h * NA + acols[None, :]
        carry = tl.load(carry_ptr + (slot * H + h) * NA + acols)
        phi = _fwd_wrap_angle(carry[None, :] + tl.load(csum_ptr + t_a, mask=vmask, other=0.0))
        sin, cos = _fwd_sincos(phi)
        # one 64-wide half at a time (fewer live tiles): the rotated half, then the pass-through half
        t_n = t[:, None] * (H * HALF) + h * HALF + cols[None, :]
        q_r = _fwd_load_biased_half(q_ptr, qb_ptr, t, h, valid, 0, N)
        tl.store(qrot_ptr + t_n, _fwd_rotate_pairs(q_r, cos, sin, CHUNK_, NA), mask=vmask)
        k_r = _fwd_load_biased_half(k_ptr, kb_ptr, t, h, valid, 0, N)
        qk_r = tl.sum(q_r * k_r, axis=1)
        kt_r = _fwd_rotate_pairs(k_r, cos, sin, CHUNK_, NA)
        tl.store(krot_ptr + t_n, kt_r, mask=vmask)
        q_p = _fwd_load_biased_half(q_ptr, qb_ptr, t, h, valid, 1, N)
        k_p = _fwd_load_biased_half(k_ptr, kb_ptr, t, h, valid, 1, N)
        tl.store(qk_ptr + t * H + h, qk_r + tl.sum(q_p * k_p, axis=1), mask=valid)
        if SAVE:
            tl.store(cos_ptr + t_a, cos, mask=vmask)
            tl.store(sin_ptr + t_a, sin, mask=vmask)
        # final states of the sequence: the row of its last token (only in its last chunk)
        last = (t == end - 1)[:, None]
        head_seq = seq * H + h
        tl.store(fangle_ptr + head_seq * NA + acols[None, :] + rows[:, None] * 0, phi, mask=last)
        tl.store(fk_ptr + head_seq * N + cols[None, :] + rows[:, None] * 0, kt_r, mask=last)
        tl.store(fk_ptr + head_seq * N + HALF + cols[None, :] + rows[:, None] * 0, k_p, mask=last)


@triton.jit
def _fwd_gate_grad(dout, y, sig, gated):
    """The gate's gradient dz = dout * y * silu'(z) (F8), silu'(z) = sig (1 + z (1 - sig)), sig = sigmoid(z), from
    gated = y * z * sig (the gate's output), all fp32: written y sig + gated - gated sig, with no term in z alone,
    which the compiler would build in the loads' layout beside the accumulator's, the sigmoid again included (the
    chunk scan: +600 SASS instructions, offline, bench/mamba3/NOTES.md "Session 35"). The one form of both kernels
    that write dz (the chunk scan's GATE_GRAD, the backward's gate kernel), so both give the same bits."""
    return dout * ((y * sig + gated) - gated * sig)


@triton.jit
def _mamba3_fwd_chunk_scan_kernel(
    qrot_ptr, krot_ptr, q_ptr, k_ptr, qb_ptr, kb_ptr, v_ptr, scal_ptr, d_ptr, z_ptr, cu_ptr, S,
    states_ptr, qk_ptr,
    out_ptr, fv_ptr, y_ptr, ms_ptr, dout_ptr, dz_ptr, io_ptr,
    H: tl.constexpr, N: tl.constexpr, P: tl.constexpr, CHUNK_: tl.constexpr, BLOCK_S: tl.constexpr,
    SAVE: tl.constexpr, GATE_GRAD: tl.constexpr, PRECISION: tl.constexpr, TPREC: tl.constexpr, V_WORD: tl.constexpr,
    Z_WORD: tl.constexpr, OUT_WORD: tl.constexpr, DOUT_WORD: tl.constexpr, DZ_WORD: tl.constexpr,
    PDL_NEXT: tl.constexpr,
):
    """Grid (chunk slots, H): the dot half of the chunk scan (§4), from the rotate kernel's q~, k~ (their rotated
    dims; the others formed from q, k and the biases, ``_fwd_tilde_half``) and q^.k^:
    strict-causal intra-chunk scores, readout of the entering state, gamma diagonal + D skip, silu(z) gate (F8);
    stores the output, y (fp32, pre-gate, when SAVE and not GATE_GRAD), the masked scores decay o A (fp32 (C, C)
    per slot and head, when SAVE: ``Mamba3FwdSaved.masked_scores``) and the final v. GATE_GRAD (a full-VJP call,
    whose cotangent dout is known before the forward): the gate's gradient (``_fwd_gate_grad``) from the y in
    registers, stored instead of y (sm_90 build, offline: 2376 SASS instructions against 2296 storing y, 2 spill
    instructions). PDL_NEXT (every launch on sm_90+): the next kernel on the stream, if launched by programmatic
    dependent launch, may start at once (kernels/common/pdl.py; a no-op otherwise). Only in a graph with forked
    side streams is that kernel the backward's intra kernel (``Mamba3BwdConfig.intra_pdl``)."""
    pdl_launch_dependents(PDL_NEXT)
    v_ptr = posted_pointer(v_ptr, io_ptr, V_WORD)
    z_ptr = posted_pointer(z_ptr, io_ptr, Z_WORD)
    out_ptr = posted_pointer(out_ptr, io_ptr, OUT_WORD)
    dout_ptr = posted_pointer(dout_ptr, io_ptr, DOUT_WORD)
    dz_ptr = posted_pointer(dz_ptr, io_ptr, DZ_WORD)
    HALF: tl.constexpr = N // 2
    slot = tl.program_id(0)
    h = tl.program_id(1)
    seq, start, end, c = _fwd_locate_chunk(cu_ptr, slot, S, BLOCK_S, CHUNK_)
    if c < tl.cdiv(end - start, CHUNK_):
        rows = tl.arange(0, CHUNK_)
        cols = tl.arange(0, HALF)
        pcols = tl.arange(0, P)
        t = start + c * CHUNK_ + rows
        valid = t < end
        vmask = valid[:, None]
        srow = scal_ptr + (slot * H + h) * 3 * CHUNK_ + rows  # ell, gamma, s (the chunk-state kernel's)
        ell = tl.load(srow)
        gamma = tl.load(srow + CHUNK_)
        scale = tl.load(srow + 2 * CHUNK_)
        state = states_ptr + (slot * H + h) * (P * N) + pcols[:, None] * N + cols[None, :]
        scores = tl.zeros((CHUNK_, CHUNK_), dtype=tl.float32)
        readout = tl.zeros((CHUNK_, P), dtype=tl.float32)
        for half in tl.static_range(2):
            qt = _fwd_tilde_half(qrot_ptr, q_ptr, qb_ptr, t, h, valid, half, H, N)
            kt = _fwd_tilde_half(krot_ptr, k_ptr, kb_ptr, t, h, valid, half, H, N)
            scores = tl.dot(qt, tl.trans(kt * scale[:, None]), scores, input_precision=PRECISION)
            readout = tl.dot(qt, tl.trans(tl.load(state + half * HALF)), readout, input_precision=PRECISION)
        decay = tl.exp(tl.minimum(ell[:, None] - ell[None, :], 0.0))
        scores = tl.where(rows[:, None] > rows[None, :], scores * decay, 0.0)
        if SAVE:  # (stored at once: stored after y, 44 spill instructions under the 168 cap, offline; here 6)
            tl.store(ms_ptr + ((slot * H + h) * CHUNK_ + rows[:, None]) * CHUNK_ + rows[None, :], scores)
        tv_off = t[:, None] * (H * P) + h * P + pcols[None, :]
        vals = tl.load(v_ptr + tv_off, mask=vmask, other=0.0)
        v = vals.to(tl.float32)
        qk = tl.load(qk_ptr + t * H + h, mask=valid, other=0.0)
        y = _m3_dot(scores, vals, TPREC) + tl.exp(ell)[:, None] * readout  # (v exact in bf16: no lo term)
        y += (tl.load(d_ptr + h) + gamma * qk)[:, None] * v
        zg = tl.load(z_ptr + tv_off, mask=vmask, other=0.0).to(tl.float32)
        sig = tl.sigmoid(zg)
        gated = y * zg * sig
        tl.store(out_ptr + tv_off, gated.to(out_ptr.dtype.element_ty), mask=vmask)
        if GATE_GRAD:
            dout = tl.load(dout_ptr + tv_off, mask=vmask, other=0.0).to(tl.float32)
            tl.store(dz_ptr + tv_off, _fwd_gate_grad(dout, y, sig, gated).to(dz_ptr.dtype.element_ty), mask=vmask)
        elif SAVE:
            tl.store(y_ptr + tv_off, y, mask=vmask)
        last = (t == end - 1)[:, None]
        tl.store(fv_ptr + (seq * H + h) * P + pcols[None, :] + rows[:, None] * 0, vals, mask=last)


def maxnreg_option(cap: int, device: torch.device) -> dict:
    """Launch options for a register cap: {"maxnreg": cap} on CUDA, none for cap 0 or off CUDA (a GPU compile
    option; the interpreter takes none)."""
    return {"maxnreg": cap} if cap and device.type == "cuda" else {}


def contiguous_each(tensors):
    """The tensors as a tuple, each made contiguous where it is not (the kernels assume the packed layout; calling
    contiguous() on every tensor would cost host time on each); None stays None."""
    return tuple(x if x is None or x.is_contiguous() else x.contiguous() for x in tensors)


def allocate_fwd_outputs(T: int, S: int, device) -> tuple:
    """Uninitialised forward outputs for T tokens and S sequences: (out (T, 32, 64) bf16, final_angle (S, 32, 32)
    fp32, final_ssm (S, 32, 64, 128) fp32, final_k (S, 32, 128) fp32, final_v (S, 32, 64) bf16)."""
    bf16, f32 = torch.bfloat16, torch.float32
    return (torch.empty((T, NHEADS, HEADDIM), dtype=bf16, device=device),
            torch.empty((S, NHEADS, NANGLES), dtype=f32, device=device),
            torch.empty((S, NHEADS, HEADDIM, DSTATE), dtype=f32, device=device),
            torch.empty((S, NHEADS, DSTATE), dtype=f32, device=device),
            torch.empty((S, NHEADS, HEADDIM), dtype=bf16, device=device))


def mamba3_siso_fwd(q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens, *, save_for_backward=True,
                    config: Mamba3FwdConfig = DEFAULT_FWD_CONFIG, validate: bool = True, out=None,
                    before_scan=None, rotate_stream: torch.cuda.Stream | None = None,
                    gate_grad: tuple | None = None, posted: Posted | None = None, after_chunk_state=None):
    """Mamba-3 SISO varlen forward with Triton (spec §3, §4), four launches (five with ``rotate_stream``), no host
    synchronisation.

    Inputs (project layout, contiguous, one device): q, k (T, 1, 128) bf16; v, z (T, 32, 64) bf16; adt, dt (T, 32)
    fp32; trap (T, 32) bf16; q_bias, k_bias (32, 128) fp32; angles (T, 32, 32) bf16; d (32,) fp32; cu_seqlens
    (S+1,) int32 starting at 0, strictly increasing, ending at T. Shapes, dtypes, devices and contiguity are checked
    (TypeError/ValueError) unless ``validate`` is False (for callers that have checked them already: the public
    entries in ``ssmkit.mamba3.op``; a check costs ~25 us of host time); the cu_seqlens values are not (that needs a
    host sync: see validate_cu_seqlens).
    Returns (out (T, 32, 64) bf16, final_angle (S, 32, 32) fp32, final_ssm (S, 32, 64, 128) fp32,
    final_k (S, 32, 128) fp32, final_v (S, 32, 64) bf16, saved): saved is a Mamba3FwdSaved, or None when
    save_for_backward is False (then y, cos_phi, sin_phi and the masked scores are not written, and the chunk
    states, chunk scalars, q_rot, k_rot and q^.k^ are temporaries, as the angle cumsum, (T, 32, 32) fp32, is in
    every call: the scan kernel reads the rotated dims of q~ and k~ from the rotate kernel either way).
    ``out``: None (new tensors) or the five output tensors to write, as ``allocate_fwd_outputs`` makes them
    (contiguous; not checked), which are then returned (a graph-backed call writes its static buffers so).
    ``before_scan``: None, or a function called with q_rot (T, 32, 64) fp32 once the rotate kernel is launched and
    before the chunk-scan launch (a graph forks the backward's state-gradient chain there, which needs q~ but not
    the scan's results). ``rotate_stream``: None (every launch on the current stream), or a CUDA stream of the device on
    which the angle-carry and rotate kernels run beside the state passing (they need only the chunk-state kernel's
    results); the current stream waits for it before the scan (the same bits either way). ``gate_grad``: None, or (dout,
    dz) for a full-VJP call, which knows the output's cotangent dout (T, 32, 64) before the forward: the scan kernel
    writes the gate's gradient into dz (T, 32, 64, z's dtype) from the y it holds (dout bf16 and dz contiguous and on
    the inputs' device; neither is checked, ``validate`` included), and y is neither written nor allocated (saved.y is
    None: the backward's gate then computes dY alone, ``mamba3_siso_bwd``; 2 x 13 MB less written and read than y saved
    and read back, and one pass over dout and z less, at T = 2184).
    ``posted``: None, or a Posted whose "v", "z", "angles" and "dout" the kernels read and whose "out", "final_ssm"
    and "dz" they write instead of those tensors (a graph); the chunk-state kernel also reads "k", "adt", "dt",
    "trap", "k_bias" and "cu_seqlens" there when the Posted names them. ``after_chunk_state``: None, or a function
    called once the chunk-state kernel is launched (a graph joins the copy of its small arguments there).
    """
    if validate:
        validate_inputs(q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens,
                        check_cu_seqlens_values=False)
        for name, x in zip(INPUT_NAMES, (q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens)):
            if not x.is_contiguous():
                raise ValueError(f"{name}: expected a contiguous tensor (the kernel assumes the packed layout)")
    if HEADDIM % config.passing_block_p != 0:
        raise ValueError(f"config.passing_block_p: expected a divisor of {HEADDIM}, got {config.passing_block_p}")
    T, S, dev = q.shape[0], cu_seqlens.numel() - 1, q.device
    slots = T // CHUNK + S
    f32 = torch.float32

    # Host time before the first launch is not hidden behind GPU work: allocate what the first kernel writes, launch
    # it, then allocate the rest while it runs.
    dstate = torch.empty((slots, NHEADS, HEADDIM, DSTATE), dtype=f32, device=dev)  # per-chunk term, chunk's frame
    decay = torch.empty((slots, NHEADS), dtype=f32, device=dev)  # Lambda = sum of adt over the chunk
    sizes = dict(H=NHEADS, N=DSTATE, P=HEADDIM, NA=NANGLES, CHUNK_=CHUNK)
    block_s = triton.next_power_of_2(S + 1)
    chunk_scalars = torch.empty((slots, NHEADS, 3, CHUNK), dtype=f32, device=dev)  # ell, gamma, s
    csum = torch.empty((T, NHEADS, NANGLES), dtype=f32, device=dev)  # in-chunk angle cumsum (rotate, passing)
    _mamba3_fwd_chunk_state_kernel[(slots, NHEADS)](
        k, v, adt, dt, trap, k_bias, angles, cu_seqlens, S, dstate, decay, chunk_scalars, csum,
        **sizes, BLOCK_S=block_s, TPREC=config.transposed_precision, num_warps=config.chunk_warps,
        **posted_kwargs(posted, cu_seqlens, "v", "angles", "k", "adt", "dt", "trap", "k_bias", "cu_seqlens"),
        **maxnreg_option(config.chunk_maxnreg, dev),
    )
    if after_chunk_state is not None:
        after_chunk_state()
    out, final_angle, final_ssm, final_k, final_v = allocate_fwd_outputs(T, S, dev) if out is None else out
    chunk_states = torch.empty((slots, NHEADS, HEADDIM, DSTATE), dtype=f32, device=dev)
    q_rot = torch.empty((T, NHEADS, DSTATE // 2), dtype=f32, device=dev)  # (kept for the backward when saving)
    k_rot = torch.empty((T, NHEADS, DSTATE // 2), dtype=f32, device=dev)
    if save_for_backward:
        saved = Mamba3FwdSaved(
            y=None if gate_grad is not None else torch.empty((T, NHEADS, HEADDIM), dtype=f32, device=dev),
            cos_phi=torch.empty((T, NHEADS, NANGLES), dtype=f32, device=dev),
            sin_phi=torch.empty((T, NHEADS, NANGLES), dtype=f32, device=dev),
            chunk_states=chunk_states, q_rot=q_rot, k_rot=k_rot, chunk_scalars=chunk_scalars,
            masked_scores=torch.empty((slots, NHEADS, CHUNK, CHUNK), dtype=f32, device=dev),
            qk=torch.empty((T, NHEADS), dtype=f32, device=dev),
        )
        save_bufs = (out if saved.y is None else saved.y, saved.cos_phi, saved.sin_phi, saved.masked_scores)
        qk = saved.qk
    else:
        saved = None
        save_bufs = (out,) * 4  # never written: SAVE is False
        qk = torch.empty((T, NHEADS), dtype=f32, device=dev)  # unrotated q^.k^
    carry = torch.empty((slots, NHEADS, NANGLES), dtype=f32, device=dev)  # wrapped Phi before the chunk

    forked = rotate_stream is not None

    def launch_carry_and_rotate():
        if forked:  # (on one stream the passing, launched before, stores the carry)
            _mamba3_fwd_angle_carry_kernel[(S, NHEADS)](cu_seqlens, csum, carry, H=NHEADS, NA=NANGLES, CHUNK_=CHUNK,
                                                        num_warps=1)
        _mamba3_fwd_rotate_kernel[(slots, NHEADS)](
            q, k, q_bias, k_bias, csum, cu_seqlens, S, carry, final_angle, final_k, qk, save_bufs[1],
            save_bufs[2], q_rot, k_rot, H=NHEADS, N=DSTATE, NA=NANGLES, CHUNK_=CHUNK, BLOCK_S=block_s,
            SAVE=save_for_backward, num_warps=config.rotate_warps, **maxnreg_option(config.rotate_maxnreg, dev),
        )
    if forked:
        rotate_stream.wait_stream(torch.cuda.current_stream(dev))
    # the passing first, then the carry and rotate kernels (the rotate kernel after it in stream order unless forked:
    # then without the carry kernel, the passing storing the carry; the one-stream path, launch for launch as before the
    # carry kernel existed, session 44): forked, the thin passing (512 programs of 4 warps at c1, serial over each
    # sequence's chunks) is dispatched first and runs from the start, the rotate kernel's programs (each half an SM's
    # registers) filling the rest; launched the other way round, the passing waited for SMs until the rotate kernel's
    # last waves: the pair spanned 65 us at c1, the passing starting 27 us into the rotate kernel's 49 (H100,
    # bench/mamba3/NOTES.md "Session 36")
    _mamba3_fwd_state_passing_kernel[(NHEADS * (HEADDIM // config.passing_block_p), S)](
        cu_seqlens, dstate, decay, csum, chunk_states, carry, final_ssm,
        **sizes, BLOCK_P=config.passing_block_p, STORE_CARRY=not forked, num_warps=config.passing_warps,
        **posted_kwargs(posted, cu_seqlens, "final_ssm"),
    )
    with torch.cuda.stream(rotate_stream) if forked else contextlib.nullcontext():
        launch_carry_and_rotate()
    if forked:
        torch.cuda.current_stream(dev).wait_stream(rotate_stream)
    if before_scan is not None:
        before_scan(q_rot)
    _mamba3_fwd_chunk_scan_kernel[(slots, NHEADS)](
        q_rot, k_rot, q, k, q_bias, k_bias, v, chunk_scalars, d, z, cu_seqlens, S, chunk_states, qk, out, final_v,
        save_bufs[0], save_bufs[3], *(gate_grad or (out, out)),
        H=NHEADS, N=DSTATE, P=HEADDIM, CHUNK_=CHUNK, BLOCK_S=block_s, SAVE=save_for_backward,
        GATE_GRAD=gate_grad is not None, PRECISION=config.input_precision, TPREC=config.transposed_precision,
        PDL_NEXT=pdl_applies(v), num_warps=config.scan_warps,
        **posted_kwargs(posted, cu_seqlens, "v", "z", "out", "dout", "dz"),
        **maxnreg_option(config.scan_maxnreg, dev),
    )
    return out, final_angle, final_ssm, final_k, final_v, saved
