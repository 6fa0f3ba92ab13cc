"""Mamba-3 solver with correct results that writes into its dt input after using it."""
from ssmkit.mamba3.reference import mamba3_siso_varlen_joint_states_full_vjp_reference


def mamba3_siso_varlen_joint_states_full_vjp(*args):
    results = mamba3_siso_varlen_joint_states_full_vjp_reference(*args)
    args[4].mul_(2.0)
    return results
