"""The eager fp32 baseline itself as a solver (fast on the CPU, independent of the kernels' state)."""
from ssmkit.mamba3.reference import mamba3_siso_varlen_joint_states_full_vjp_reference


def mamba3_siso_varlen_joint_states_full_vjp(*args):
    return mamba3_siso_varlen_joint_states_full_vjp_reference(*args)
