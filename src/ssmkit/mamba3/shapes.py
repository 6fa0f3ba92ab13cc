"""Frozen sizes and argument names of the Mamba-3 SISO operator.

Spec /work/shared/spec/mamba3_siso.md, "Decisions for this project" and §2: GQA 1 -> 32 heads, Q/K (d_state) width
128, V (head) width 64, 32 rotary angles per head (dims 0..63 rotated in adjacent pairs, 64..127 pass through), chunk 64.
"""

NHEADS = 32  # value heads H
NHEADS_QK = 1  # Q/K heads (GQA: each Q/K head serves NHEADS // NHEADS_QK value heads)
DSTATE = 128  # N: Q/K width
HEADDIM = 64  # P: V/Z width
NANGLES = 32  # rotary angles per head; pairs (2m, 2m+1), m < NANGLES, are rotated
CHUNK = 64  # chunk length of the kernels (spec §4); the chunk grid restarts at every sequence

#: The 12 operator inputs, in call order.
INPUT_NAMES = ("q", "k", "v", "adt", "dt", "trap", "q_bias", "k_bias", "angles", "d", "z", "cu_seqlens")
#: The 5 cotangents of the full VJP, in call order (one per output).
COTANGENT_NAMES = ("dout", "dfinal_angle", "dfinal_ssm", "dfinal_k", "dfinal_v")
#: The 5 outputs of the forward, in return order.
OUTPUT_NAMES = ("out", "final_angle", "final_ssm", "final_k", "final_v")
#: The 11 gradients, in return order (one per differentiable input).
GRAD_NAMES = ("dq", "dk", "dv", "dadt", "ddt", "dtrap", "dq_bias", "dk_bias", "dangles", "dd", "dz")
#: The 16 results of ``mamba3_siso_varlen_joint_states_full_vjp``, in return order.
RESULT_NAMES = OUTPUT_NAMES + GRAD_NAMES
