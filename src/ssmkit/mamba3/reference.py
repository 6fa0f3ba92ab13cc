"""Eager fp32 reference of the Mamba-3 SISO varlen operator: the baseline ("starter") speedups are measured against.

Plain PyTorch, one sequence at a time, batched over the 32 heads, in the quadratic (L x L) form of spec §3 / §11
(the form of the official eager reference, [TEST] ``mamba3_siso_fwd_ref``). Differentiable by autograd; the full VJP
is autograd through it. No custom kernels, no torch.compile.
"""
import math

import torch

from ssmkit.mamba3.shapes import NANGLES, NHEADS, NHEADS_QK


def wrap_angle(x):
    """x - 2*pi*floor(x / 2*pi), in [0, 2*pi) (spec §3 F2); the floor has zero gradient, so d/dx is 1."""
    return x - 2 * math.pi * torch.floor(x / (2 * math.pi))


def rotate_pairs(x, phi):
    """Rotate adjacent pairs of the last dim (spec §3 F4).

    x (..., 128), phi (..., 32), same float dtype: pair (2m, 2m+1), m < 32, is rotated by +phi[m]; dims 64..127
    pass through. Returns a new tensor shaped like x.
    """
    pairs = x[..., : 2 * NANGLES].unflatten(-1, (NANGLES, 2))
    even, odd = pairs[..., 0], pairs[..., 1]
    cos, sin = torch.cos(phi), torch.sin(phi)
    rotated = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)
    return torch.cat((rotated, x[..., 2 * NANGLES :]), dim=-1)


def _sequence_forward(q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z):
    """One sequence, fp32 throughout, shapes as the operator's with T = L (q, k already expanded to 32 heads).

    Returns (out (L, H, P), final_angle (H, NA), final_ssm (H, P, N), final_k (H, N)), all fp32.
    """
    phi = wrap_angle(torch.cumsum(math.pi * torch.tanh(angles) * dt[..., None], dim=0))  # F1, F2: (L, H, NA)
    q_hat, k_hat = q + q_bias, k + k_bias  # F3: (L, H, N)
    q_rot, k_rot = rotate_pairs(q_hat, phi), rotate_pairs(k_hat, phi)  # F4
    p = torch.sigmoid(trap)  # F5: (L, H)
    gamma = dt * p
    gamma_next = torch.cat((dt[1:] * (1 - p[1:]), torch.zeros_like(dt[:1])))  # masked at the sequence end
    scale = gamma + gamma_next
    log_decay = torch.cumsum(adt, dim=0).t()  # F6: (H, L)
    length = q.shape[0]
    causal = torch.ones(length, length, dtype=torch.bool, device=q.device).tril()
    # head-major (H, t, j) so that both einsums below are plain batched matmuls without big permuted copies
    decay = torch.exp((log_decay[:, :, None] - log_decay[:, None, :]).masked_fill(~causal, -math.inf))
    scores = torch.einsum("thn,jhn->htj", q_rot, k_rot * scale[..., None])
    qk = (q_hat * k_hat).sum(-1)  # (L, H)
    y = torch.einsum("htj,jhp->thp", decay * scores, v) + (d - gamma_next * qk)[..., None] * v  # F7, reference form
    out = y * z * torch.sigmoid(z)  # F8
    weight = torch.exp(log_decay[:, -1:] - log_decay).t() * scale  # (L, H)
    final_ssm = torch.einsum("jh,jhp,jhn->hpn", weight, v, k_rot)
    return out, phi[-1], final_ssm, k_rot[-1]


def mamba3_siso_reference(q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens):
    """Forward of the operator in fp32 eager PyTorch, differentiable by autograd.

    Inputs as the operator contract (spec "Decisions"; not validated here): q, k (T, 1, 128) bf16; v, z (T, 32, 64)
    bf16; adt, dt (T, 32) fp32; trap (T, 32) bf16; q_bias, k_bias (32, 128) fp32; angles (T, 32, 32) bf16;
    d (32,) fp32; cu_seqlens (S+1,) int32 (read on the host).
    Returns (out (T, 32, 64) bf16, final_angle (S, 32, 32) fp32, final_ssm (S, 32, 64, 128) fp32,
    final_k (S, 32, 128) fp32, final_v (S, 32, 64) bf16). Every bf16 input is upcast once, so gradients accumulate
    in fp32 and are rounded once to their input's dtype.
    """
    group = torch.arange(NHEADS, device=q.device) // (NHEADS // NHEADS_QK)  # value head -> qk head
    q32, k32 = q.float()[:, group], k.float()[:, group]
    v32, trap32, angles32, z32 = v.float(), trap.float(), angles.float(), z.float()
    bounds = cu_seqlens.tolist()
    outs, finals = [], []
    for start, end in zip(bounds[:-1], bounds[1:]):
        piece = slice(start, end)
        out, final_angle, final_ssm, final_k = _sequence_forward(
            q32[piece], k32[piece], v32[piece], adt[piece], dt[piece], trap32[piece], q_bias, k_bias,
            angles32[piece], d, z32[piece],
        )
        outs.append(out)
        finals.append((final_angle, final_ssm, final_k, v32[end - 1]))
    final_angle, final_ssm, final_k, final_v = (torch.stack(parts) for parts in zip(*finals))
    return torch.cat(outs).to(v.dtype), final_angle, final_ssm, final_k, final_v.to(v.dtype)


def full_vjp_by_autograd(forward, q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens, *cotangents):
    """Run ``forward`` (the 12 inputs -> 5 outputs) and autograd with the 5 cotangents; return the 16 results.

    Each differentiable input is detached into a fresh leaf (inputs are never modified); gradients come back in the
    dtype of the leaf that ``forward`` is differentiated against, outputs are detached.
    """
    leaves = [x.detach().requires_grad_(True) for x in (q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z)]
    with torch.enable_grad():
        outputs = forward(*leaves, cu_seqlens)
        grads = torch.autograd.grad(outputs, leaves, grad_outputs=cotangents, materialize_grads=True)
    return tuple(o.detach() for o in outputs) + tuple(grads)


def mamba3_siso_varlen_joint_states_full_vjp_reference(
    q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens,
    dout, dfinal_angle, dfinal_ssm, dfinal_k, dfinal_v,
):
    """Forward plus full VJP by autograd through ``mamba3_siso_reference`` (fp32 math).

    Inputs and cotangents as the operator contract (not validated here). Returns 16 new tensors:
    (out bf16, final_angle fp32, final_ssm fp32, final_k fp32, final_v bf16, dq, dk, dv, dadt, ddt, dtrap, dq_bias,
    dk_bias, dangles, dd, dz), each gradient in its input's dtype and shape.
    """
    return full_vjp_by_autograd(
        mamba3_siso_reference, q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens,
        dout, dfinal_angle, dfinal_ssm, dfinal_k, dfinal_v,
    )
