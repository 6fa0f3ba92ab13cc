"""Deterministic random inputs for the Mamba-3 SISO operator (spec §8, the official test draws, with two choices).

All draws come from one CPU ``torch.Generator`` seeded with ``seed`` in a fixed order, then move to ``device``, so
a seed gives the same values on every device. Choices where the brief left one open:
trap = U(0, 1) raw logits (the official draw; p = sigmoid(trap) in (0.5, 0.73)); angles = randn (scale 1, the
official batched tests; the varlen test's x0.1 hardly rotates or wraps); d = 1 + 0.1 * randn (not exactly ones, so a
kernel that mixes up heads of d is caught).
"""
import math

import torch

from ssmkit.mamba3.shapes import DSTATE, HEADDIM, NANGLES, NHEADS, NHEADS_QK

DT_MIN, DT_MAX = 1e-3, 0.1  # dt log-uniform in [DT_MIN, DT_MAX]
A_MIN, A_MAX = 1.0, 16.0  # adt = -U(A_MIN, A_MAX) * dt
RMS_EPS = 1e-6


def _rms_normalised(x):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + RMS_EPS)


def make_inputs(seqlens, seed, device="cpu"):
    """Return the operator's 17 named arguments for packed sequences of the given lengths.

    seqlens: non-empty sequence of positive ints (S sequences, T = sum). Returns a dict, keys in call order:
    q, k (T, 1, 128) bf16 rms-normalised randn; v, z (T, 32, 64) bf16 randn; adt (T, 32) fp32 = -U(1, 16) * dt;
    dt (T, 32) fp32 log-uniform in [1e-3, 0.1]; trap (T, 32) bf16 U(0, 1); q_bias, k_bias (32, 128) fp32 randn;
    angles (T, 32, 32) bf16 randn; d (32,) fp32 1 + 0.1 randn; z; cu_seqlens (S+1,) int32; cotangents dout
    (T, 32, 64) bf16, dfinal_angle (S, 32, 32) fp32, dfinal_ssm (S, 32, 64, 128) fp32, dfinal_k (S, 32, 128) fp32,
    dfinal_v (S, 32, 64) bf16, all randn. Usage: ``fn(**make_inputs([70, 130], seed=0))``.
    """
    seqlens = list(seqlens)
    if not seqlens or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in seqlens):
        raise ValueError(f"seqlens must be a non-empty list of positive ints, got {seqlens}")
    total, count = sum(seqlens), len(seqlens)
    gen = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=gen)

    def uniform(low, high, *shape):
        return low + (high - low) * torch.rand(*shape, generator=gen)

    bf16 = torch.bfloat16
    dt = torch.exp(uniform(math.log(DT_MIN), math.log(DT_MAX), total, NHEADS))
    args = {
        "q": _rms_normalised(randn(total, NHEADS_QK, DSTATE)).to(bf16),
        "k": _rms_normalised(randn(total, NHEADS_QK, DSTATE)).to(bf16),
        "v": randn(total, NHEADS, HEADDIM).to(bf16),
        "adt": -uniform(A_MIN, A_MAX, total, NHEADS) * dt,
        "dt": dt,
        "trap": uniform(0.0, 1.0, total, NHEADS).to(bf16),
        "q_bias": randn(NHEADS, DSTATE),
        "k_bias": randn(NHEADS, DSTATE),
        "angles": randn(total, NHEADS, NANGLES).to(bf16),
        "d": 1 + 0.1 * randn(NHEADS),
        "z": randn(total, NHEADS, HEADDIM).to(bf16),
        "cu_seqlens": torch.tensor([0] + seqlens, dtype=torch.int64).cumsum(0).to(torch.int32),
        "dout": randn(total, NHEADS, HEADDIM).to(bf16),
        "dfinal_angle": randn(count, NHEADS, NANGLES),
        "dfinal_ssm": randn(count, NHEADS, HEADDIM, DSTATE),
        "dfinal_k": randn(count, NHEADS, DSTATE),
        "dfinal_v": randn(count, NHEADS, HEADDIM).to(bf16),
    }
    return {name: x.to(device) for name, x in args.items()}
