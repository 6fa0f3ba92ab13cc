"""Mamba-3 solver: the package's operator entry (Triton forward + backward kernels on CUDA, see src/ssmkit/mamba3/op.py)."""
from ssmkit.mamba3 import mamba3_siso_varlen_joint_states_full_vjp

__all__ = ["mamba3_siso_varlen_joint_states_full_vjp"]
