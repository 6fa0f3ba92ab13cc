"""Public entry points of the Mamba-3 SISO varlen operator.

For now both run the eager fp32 reference (ssmkit.mamba3.reference) after validating the arguments; the Triton
kernels will replace the reference here.
"""
from ssmkit.mamba3.reference import mamba3_siso_reference, mamba3_siso_varlen_joint_states_full_vjp_reference
from ssmkit.mamba3.validate import validate_inputs


def mamba3_siso_varlen_joint_states_full_vjp(
    q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens,
    dout, dfinal_angle, dfinal_ssm, dfinal_k, dfinal_v,
):
    """Forward plus full VJP of the operator (spec §3, §7.1); inputs are not modified.

    Inputs: q, k (T, 1, 128) bf16; v, z (T, 32, 64) bf16; adt, dt (T, 32) fp32; trap (T, 32) bf16; q_bias, k_bias
    (32, 128) fp32; angles (T, 32, 32) bf16; d (32,) fp32; cu_seqlens (S+1,) int32; cotangents dout (T, 32, 64) bf16,
    dfinal_angle (S, 32, 32) fp32, dfinal_ssm (S, 32, 64, 128) fp32, dfinal_k (S, 32, 128) fp32, dfinal_v (S, 32, 64)
    bf16. Returns 16 new tensors: out (T, 32, 64) bf16, final_angle (S, 32, 32) fp32, final_ssm (S, 32, 64, 128)
    fp32, final_k (S, 32, 128) fp32, final_v (S, 32, 64) bf16, then dq, dk, dv, dadt, ddt, dtrap, dq_bias, dk_bias,
    dangles, dd, dz, each shaped and typed like its input. Raises TypeError/ValueError on invalid arguments.
    """
    cotangents = (dout, dfinal_angle, dfinal_ssm, dfinal_k, dfinal_v)
    validate_inputs(q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens, cotangents)
    return mamba3_siso_varlen_joint_states_full_vjp_reference(
        q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens, *cotangents
    )


def mamba3_siso(q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens):
    """Autograd form of the operator: returns (out, final_angle, final_ssm, final_k, final_v), differentiable.

    Shapes and dtypes as ``mamba3_siso_varlen_joint_states_full_vjp`` (outputs: out bf16, final_angle fp32,
    final_ssm fp32, final_k fp32, final_v bf16). Raises TypeError/ValueError on invalid arguments.
    """
    validate_inputs(q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens)
    return mamba3_siso_reference(q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens)
