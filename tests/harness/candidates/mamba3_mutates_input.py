"""Contract break: the eager baseline's results, but the input ``dt`` (argument 5) is modified in place afterwards."""
from ssmkit.mamba3.reference import mamba3_siso_varlen_joint_states_full_vjp_reference as _solver


def mamba3_siso_varlen_joint_states_full_vjp(*args):
    results = _solver(*args)
    args[4].mul_(1.5)
    return results
