"""Float64 oracle of the Mamba-3 SISO operator: the token-by-token recurrence of spec §5 (tests only, small T).

Independent of the quadratic reference on purpose: the state is advanced one token at a time with the
exponential-trapezoidal update (alpha, beta, gamma), the rotation is a complex multiplication, the angle is wrapped
with ``torch.remainder``. Gradients come from autograd in float64. Cost: O(T) Python steps and about
32*64*128*8 B = 2 MiB of saved state per token for the backward, so keep T to a few hundred tokens.
"""
import math

import torch

from ssmkit.mamba3.reference import full_vjp_by_autograd
from ssmkit.mamba3.shapes import DSTATE, HEADDIM, NANGLES, NHEADS, NHEADS_QK


def _rotate_complex(x, phi):
    """x (H, 128), phi (H, 32) float64: pairs (2m, 2m+1), m < 32, as complex numbers times e^{i phi[m]}."""
    pairs = torch.view_as_complex(x[:, : 2 * NANGLES].reshape(x.shape[0], NANGLES, 2).contiguous())
    rotated = torch.view_as_real(pairs * torch.polar(torch.ones_like(phi), phi)).flatten(-2)
    return torch.cat((rotated, x[:, 2 * NANGLES :]), dim=-1)


def _sequence_steps(q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z):
    """One sequence, float64, by the step recurrence of spec §5; q, k (L, Hqk, N), others as the operator's.

    Returns (out (L, H, P), final_angle (H, NA), final_ssm (H, P, N), final_k (H, N), final_v (H, P)).
    """
    group = torch.arange(NHEADS, device=q.device) // (NHEADS // NHEADS_QK)
    phi = torch.zeros(NHEADS, NANGLES, dtype=torch.float64, device=q.device)
    state = torch.zeros(NHEADS, HEADDIM, DSTATE, dtype=torch.float64, device=q.device)
    k_prev = torch.zeros(NHEADS, DSTATE, dtype=torch.float64, device=q.device)
    v_prev = torch.zeros(NHEADS, HEADDIM, dtype=torch.float64, device=q.device)
    outs = []
    # unbind once: indexing x[t] per step would cost a full-size zero tensor per step in the backward
    for q_t, k_t, v_t, adt_t, dt_t, trap_t, angles_t, z_t in zip(
        *(x.unbind(0) for x in (q, k, v, adt, dt, trap, angles, z))
    ):
        phi = torch.remainder(phi + math.pi * torch.tanh(angles_t) * dt_t[:, None], 2 * math.pi)
        q_rot = _rotate_complex(q_t[group] + q_bias, phi)
        k_rot = _rotate_complex(k_t[group] + k_bias, phi)
        p = torch.sigmoid(trap_t)
        alpha = torch.exp(adt_t)
        beta = (1 - p) * dt_t * alpha
        gamma = p * dt_t
        # S <- alpha S + beta v_prev k_prev^T + gamma v_t k_rot^T, the two rank-1 terms as one batched matmul
        writes = torch.stack((beta[:, None] * v_prev, gamma[:, None] * v_t), dim=-1)  # (H, P, 2)
        keys = torch.stack((k_prev, k_rot), dim=1)  # (H, 2, N)
        state = torch.baddbmm(alpha[:, None, None] * state, writes, keys)
        y = torch.bmm(state, q_rot[:, :, None])[..., 0] + d[:, None] * v_t
        outs.append(y * z_t * torch.sigmoid(z_t))
        k_prev, v_prev = k_rot, v_t
    return torch.stack(outs), phi, state, k_prev, v_prev


def mamba3_siso_oracle(q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens):
    """Forward in float64 by the token recurrence; shapes as ``mamba3_siso_reference``, any float input dtype.

    Returns (out (T, 32, 64), final_angle (S, 32, 32), final_ssm (S, 32, 64, 128), final_k (S, 32, 128),
    final_v (S, 32, 64)), all float64, differentiable by autograd with respect to the inputs.
    """
    q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z = (
        x.double() for x in (q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z)
    )
    bounds = cu_seqlens.tolist()
    per_sequence = []
    for start, end in zip(bounds[:-1], bounds[1:]):
        s = slice(start, end)
        per_sequence.append(
            _sequence_steps(q[s], k[s], v[s], adt[s], dt[s], trap[s], q_bias, k_bias, angles[s], d, z[s])
        )
    outs, final_angle, final_ssm, final_k, final_v = zip(*per_sequence)
    return torch.cat(outs), torch.stack(final_angle), torch.stack(final_ssm), torch.stack(final_k), torch.stack(final_v)


def mamba3_siso_varlen_joint_states_full_vjp_oracle(
    q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens,
    dout, dfinal_angle, dfinal_ssm, dfinal_k, dfinal_v,
):
    """Forward plus full VJP in float64 (autograd through the token recurrence).

    Arguments as the operator's, any float dtype (everything is upcast to float64 first). Returns the 16 results
    (out, final_angle, final_ssm, final_k, final_v, dq, dk, dv, dadt, ddt, dtrap, dq_bias, dk_bias, dangles, dd, dz)
    in float64 with the operator's shapes.
    """
    inputs = [x.double() for x in (q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z)]
    cotangents = [x.double() for x in (dout, dfinal_angle, dfinal_ssm, dfinal_k, dfinal_v)]
    return full_vjp_by_autograd(mamba3_siso_oracle, *inputs, cu_seqlens, *cotangents)
