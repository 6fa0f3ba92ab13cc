"""Public entry points of the Mamba-3 SISO varlen operator, over the Triton kernels.

Dispatch (``kernels_apply``): CUDA tensors run the Triton kernels (ssmkit.kernels.mamba3: fwd.py, then bwd.py on
the forward's saved tensors); CPU tensors run the same kernels in Triton's interpreter when TRITON_INTERPRET=1,
otherwise the eager fp32 reference (ssmkit.mamba3.reference).
Validation: types, shapes, dtypes and devices of every argument are always checked (no host sync). The cu_seqlens
values (start 0, strictly increasing, end T) need a device-to-host copy, so ``check_cu_seqlens`` decides: None
(default) checks them on CPU and skips them on CUDA (the hot path stays free of host syncs; wrong values there give
wrong results, not an error); True or False forces the choice.
Graphs: on CUDA the full-VJP entry runs as one captured CUDA graph per (T, S, device, configs) (``graph=None``, the
default; ssmkit.mamba3.graph: a call is ~one replay of host time instead of 10 launches and ~40 allocations) for calls
up to GRAPH_MAX_CALL_BYTES (GRAPH_MAX_TOKENS, 20480 tokens in 4 sequences: beyond it the graph's gain, a few percent
there, is not worth the ~180 KB per token each graph keeps between calls; GRAPHS_MAX_CALL_BYTES bounds the graphs kept
together), from a key's second call on, except while the caller itself is capturing a graph; ``graph=False`` launches
the kernels directly, ``graph=True`` takes the graph from the first call (off CUDA: its interpreter stand-in, for
tests). Both give the same bits. A call whose arguments have the layout of the most recently used graph's
(``replay_recent``) replays it before the checks above, which it would pass (unless the cu_seqlens values are to be
checked).
"""
import torch

from ssmkit.kernels.dispatch import kernels_apply
from ssmkit.kernels.mamba3.bwd import DEFAULT_BWD_CONFIG, allocate_grads, mamba3_siso_bwd
from ssmkit.kernels.mamba3.fwd import DEFAULT_FWD_CONFIG, Mamba3FwdSaved, contiguous_each, mamba3_siso_fwd
from ssmkit.mamba3.graph import full_vjp_graphed, graph_applies, replay_recent
from ssmkit.mamba3.reference import mamba3_siso_reference, mamba3_siso_varlen_joint_states_full_vjp_reference
from ssmkit.mamba3.validate import validate_inputs


#: Argument layouts (type, shape, dtype, device of each tensor) that passed validate_inputs without the cu_seqlens
#: value check: its outcome depends on nothing else, so a layout seen before skips it (~25-70 us of host time on
#: the H200 machines, bench/mamba3/NOTES.md "Session 6"). Bounded: cleared when full.
_VALID_LAYOUTS: set = set()
_MAX_VALID_LAYOUTS = 64


def _validate(inputs, cotangents, check_cu_seqlens):
    check = inputs[0].device.type != "cuda" if check_cu_seqlens is None else check_cu_seqlens
    if check:
        validate_inputs(*inputs, cotangents, check_cu_seqlens_values=True)
        return
    try:
        layout = (cotangents is None, *((type(x), x.shape, x.dtype, x.device)
                                        for x in (*inputs, *(cotangents if cotangents is not None else ()))))
    except (AttributeError, TypeError):  # not tensors: validate_inputs says what is wrong
        layout = None
    if layout is not None and layout in _VALID_LAYOUTS:
        return
    validate_inputs(*inputs, cotangents, check_cu_seqlens_values=False)
    if layout is not None:
        if len(_VALID_LAYOUTS) >= _MAX_VALID_LAYOUTS:
            _VALID_LAYOUTS.clear()
        _VALID_LAYOUTS.add(layout)


def mamba3_siso_varlen_joint_states_full_vjp(
    q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens,
    dout, dfinal_angle, dfinal_ssm, dfinal_k, dfinal_v, *, check_cu_seqlens=None,
    fwd_config=DEFAULT_FWD_CONFIG, bwd_config=DEFAULT_BWD_CONFIG, graph=None,
):
    """Forward plus full VJP of the operator (spec §3, §7.1); inputs are not modified.

    Inputs: q, k (T, 1, 128) bf16; v, z (T, 32, 64) bf16; adt, dt (T, 32) fp32; trap (T, 32) bf16; q_bias, k_bias
    (32, 128) fp32; angles (T, 32, 32) bf16; d (32,) fp32; cu_seqlens (S+1,) int32; cotangents dout (T, 32, 64) bf16,
    dfinal_angle (S, 32, 32) fp32, dfinal_ssm (S, 32, 64, 128) fp32, dfinal_k (S, 32, 128) fp32, dfinal_v (S, 32, 64)
    bf16. Returns 16 new tensors: out (T, 32, 64) bf16, final_angle (S, 32, 32) fp32, final_ssm (S, 32, 64, 128)
    fp32, final_k (S, 32, 128) fp32, final_v (S, 32, 64) bf16, then dq, dk, dv, dadt, ddt, dtrap, dq_bias, dk_bias,
    dangles, dd, dz, each shaped and typed like its input. Raises TypeError/ValueError on invalid arguments
    (cu_seqlens values: see the module docstring). fwd_config / bwd_config: the kernels' launch configurations
    (Mamba3FwdConfig, Mamba3BwdConfig; the bench sweeps them), unused on the eager path. graph: None, True or
    False (see the module docstring: the captured-graph path, same results).
    """
    if check_cu_seqlens is False or (check_cu_seqlens is None and type(q) is torch.Tensor and q.is_cuda):
        results = replay_recent((q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens, dout,
                                 dfinal_angle, dfinal_ssm, dfinal_k, dfinal_v), fwd_config, bwd_config, graph)
        if results is not None:  # (the last graph's layout: the checks below would pass and choose that graph)
            return results
    inputs = (q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens)
    cotangents = (dout, dfinal_angle, dfinal_ssm, dfinal_k, dfinal_v)
    _validate(inputs, cotangents, check_cu_seqlens)
    if not kernels_apply(q.device):
        return mamba3_siso_varlen_joint_states_full_vjp_reference(*inputs, *cotangents)
    if graph_applies(graph, q, cu_seqlens):
        results = full_vjp_graphed((*inputs, *cotangents), fwd_config, bwd_config, force=graph is True)
        if results is not None:
            return results
    inputs, cotangents = contiguous_each(inputs), contiguous_each(cotangents)
    grads = allocate_grads(*inputs[:11])  # (dz written by the forward's chunk scan: dout is known already)
    *outputs, saved = mamba3_siso_fwd(*inputs, config=fwd_config, validate=False,  # (checked above)
                                      gate_grad=(cotangents[0], grads.dz))
    return (*outputs, *mamba3_siso_bwd(*inputs, saved, *cotangents, config=bwd_config, grads=grads))


class _Mamba3Siso(torch.autograd.Function):
    """Forward kernel saving ``Mamba3FwdSaved`` (y, cos and sin of Phi, chunk states, rotated q and k, chunk
    scalars); backward = the backward kernels on those (spec §7)."""

    @staticmethod
    def forward(ctx, q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens):
        inputs = contiguous_each((q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens))
        *outputs, saved = mamba3_siso_fwd(*inputs, validate=False)  # (mamba3_siso checked them)
        ctx.save_for_backward(*inputs, *saved)
        return tuple(outputs)

    @staticmethod
    def backward(ctx, dout, dfinal_angle, dfinal_ssm, dfinal_k, dfinal_v):
        saved = ctx.saved_tensors
        inputs, kept = saved[:-len(Mamba3FwdSaved._fields)], saved[-len(Mamba3FwdSaved._fields):]
        grads = mamba3_siso_bwd(*inputs, Mamba3FwdSaved(*kept), dout, dfinal_angle, dfinal_ssm, dfinal_k, dfinal_v)
        return (*grads, None)  # no gradient for cu_seqlens


def mamba3_siso(q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens, *, check_cu_seqlens=None):
    """Autograd form of the operator: returns (out, final_angle, final_ssm, final_k, final_v), differentiable.

    Shapes and dtypes as ``mamba3_siso_varlen_joint_states_full_vjp`` (outputs: out bf16, final_angle fp32,
    final_ssm fp32, final_k fp32, final_v bf16); on the kernel path the backward runs the backward kernels with the
    forward's saved tensors (an output left out of the loss gets a zero cotangent). When nothing is to be
    differentiated (grad mode off, or no input requires grad) the forward kernels run without saving anything for
    the backward (``Mamba3FwdSaved``: ~110 MB at T = 2184). Raises TypeError/ValueError on invalid arguments.
    """
    inputs = (q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens)
    _validate(inputs, None, check_cu_seqlens)
    if not kernels_apply(q.device):
        return mamba3_siso_reference(*inputs)
    if not (torch.is_grad_enabled() and any(x.requires_grad for x in inputs)):
        return tuple(mamba3_siso_fwd(*contiguous_each(inputs), save_for_backward=False, validate=False)[:5])
    return _Mamba3Siso.apply(*inputs)
