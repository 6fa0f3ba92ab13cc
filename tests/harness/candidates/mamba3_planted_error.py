"""Planted error: the eager baseline with the output ``out`` scaled by 1.02 (everything else exact)."""
from ssmkit.mamba3.reference import mamba3_siso_varlen_joint_states_full_vjp_reference as _solver


def mamba3_siso_varlen_joint_states_full_vjp(*args):
    results = list(_solver(*args))
    results[0] = results[0] * 1.02
    return tuple(results)
