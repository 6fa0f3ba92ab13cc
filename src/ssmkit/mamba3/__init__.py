"""Mamba-3 SISO varlen training operator (forward + full VJP); contract: /work/shared/spec/mamba3_siso.md.

Public entries: ``mamba3_siso_varlen_joint_states_full_vjp`` (16 results) and ``mamba3_siso`` (autograd form).
Modules: shapes (frozen sizes, names), validate, reference (eager fp32 baseline), oracle (float64 recurrence),
inputs (seeded draws), tolerances (comparison bounds), op (public entry), graph (the full-VJP call as one
CUDA graph), cases.json (visible cases).
"""
from ssmkit.mamba3.op import mamba3_siso, mamba3_siso_varlen_joint_states_full_vjp

__all__ = ["mamba3_siso", "mamba3_siso_varlen_joint_states_full_vjp"]
