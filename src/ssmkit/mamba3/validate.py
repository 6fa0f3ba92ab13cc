"""Argument checks for the Mamba-3 SISO operator (spec "Decisions for this project" table).

``validate_inputs`` checks types, shapes, dtypes and devices of all 17 arguments without a host sync;
``validate_cu_seqlens`` checks the boundary values (one device-to-host copy), so a fast path can choose to skip it.
"""
import torch

from ssmkit.mamba3.shapes import DSTATE, HEADDIM, NANGLES, NHEADS, NHEADS_QK

_FROZEN = (
    f"frozen configuration: GQA {NHEADS_QK} -> {NHEADS} heads, Q/K width {DSTATE}, V/Z width {HEADDIM}, "
    f"{NANGLES} rotary angles per head"
)

# name -> (shape template with "T" = total tokens and "S" = number of sequences, dtype)
_INPUT_SPECS = {
    "q": (("T", NHEADS_QK, DSTATE), torch.bfloat16),
    "k": (("T", NHEADS_QK, DSTATE), torch.bfloat16),
    "v": (("T", NHEADS, HEADDIM), torch.bfloat16),
    "adt": (("T", NHEADS), torch.float32),
    "dt": (("T", NHEADS), torch.float32),
    "trap": (("T", NHEADS), torch.bfloat16),
    "q_bias": ((NHEADS, DSTATE), torch.float32),
    "k_bias": ((NHEADS, DSTATE), torch.float32),
    "angles": (("T", NHEADS, NANGLES), torch.bfloat16),
    "d": ((NHEADS,), torch.float32),
    "z": (("T", NHEADS, HEADDIM), torch.bfloat16),
}
_COTANGENT_SPECS = {
    "dout": (("T", NHEADS, HEADDIM), torch.bfloat16),
    "dfinal_angle": (("S", NHEADS, NANGLES), torch.float32),
    "dfinal_ssm": (("S", NHEADS, HEADDIM, DSTATE), torch.float32),
    "dfinal_k": (("S", NHEADS, DSTATE), torch.float32),
    "dfinal_v": (("S", NHEADS, HEADDIM), torch.bfloat16),
}


def _check_tensor(name, x, template, dtype, sizes, device):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    expected = tuple(sizes.get(dim, dim) for dim in template)
    if tuple(x.shape) != expected:
        shown = ", ".join(str(dim) for dim in template)
        raise ValueError(
            f"{name} must have shape ({shown}) = {expected} (T = {sizes['T']} tokens, S = {sizes['S']} sequences; "
            f"{_FROZEN}), got {tuple(x.shape)}"
        )
    if x.dtype != dtype:
        raise TypeError(f"{name} must have dtype {dtype}, got {x.dtype}")
    if x.device != device:
        raise ValueError(f"all tensors must be on one device: q is on {device}, {name} is on {x.device}")


def validate_inputs(
    q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z, cu_seqlens, cotangents=None, *, check_cu_seqlens_values=True
):
    """Raise TypeError/ValueError unless the arguments match the operator contract; return None.

    Shapes and dtypes (T = q.shape[0] tokens, S = cu_seqlens.numel() - 1 sequences):
    q, k (T, 1, 128) bf16; v, z (T, 32, 64) bf16; adt, dt (T, 32) fp32; trap (T, 32) bf16; q_bias, k_bias (32, 128)
    fp32; angles (T, 32, 32) bf16; d (32,) fp32; cu_seqlens (S+1,) int32 with S >= 1. ``cotangents``, if given, is
    the 5-tuple (dout (T, 32, 64) bf16, dfinal_angle (S, 32, 32) fp32, dfinal_ssm (S, 32, 64, 128) fp32,
    dfinal_k (S, 32, 128) fp32, dfinal_v (S, 32, 64) bf16). All tensors on q's device.
    The shape/dtype/device checks never synchronise with the device; with ``check_cu_seqlens_values`` (default)
    ``validate_cu_seqlens`` also checks the boundary values, which copies cu_seqlens to the host.
    """
    if not isinstance(q, torch.Tensor):
        raise TypeError(f"q must be a torch.Tensor, got {type(q).__name__}")
    if q.dim() != 3 or q.shape[0] < 1:
        raise ValueError(f"q must have shape (T, {NHEADS_QK}, {DSTATE}) with T >= 1 ({_FROZEN}), got {tuple(q.shape)}")
    if not isinstance(cu_seqlens, torch.Tensor):
        raise TypeError(f"cu_seqlens must be a torch.Tensor, got {type(cu_seqlens).__name__}")
    if cu_seqlens.dim() != 1 or cu_seqlens.numel() < 2:
        raise ValueError(
            f"cu_seqlens must be 1-D of shape (S+1,) with S >= 1 sequences, got shape {tuple(cu_seqlens.shape)}"
        )
    if cu_seqlens.dtype != torch.int32:
        raise TypeError(f"cu_seqlens must have dtype torch.int32, got {cu_seqlens.dtype}")
    device = q.device
    if cu_seqlens.device != device:
        raise ValueError(f"all tensors must be on one device: q is on {device}, cu_seqlens is on {cu_seqlens.device}")
    sizes = {"T": q.shape[0], "S": cu_seqlens.numel() - 1}
    values = (q, k, v, adt, dt, trap, q_bias, k_bias, angles, d, z)
    for (name, (template, dtype)), x in zip(_INPUT_SPECS.items(), values):
        _check_tensor(name, x, template, dtype, sizes, device)
    if cotangents is not None:
        if not isinstance(cotangents, (tuple, list)) or len(cotangents) != len(_COTANGENT_SPECS):
            raise TypeError(
                f"cotangents must be a tuple of {len(_COTANGENT_SPECS)} tensors {tuple(_COTANGENT_SPECS)}, "
                f"got {type(cotangents).__name__}"
                + (f" of length {len(cotangents)}" if isinstance(cotangents, (tuple, list)) else "")
            )
        for (name, (template, dtype)), x in zip(_COTANGENT_SPECS.items(), cotangents):
            _check_tensor(name, x, template, dtype, sizes, device)
    if check_cu_seqlens_values:
        validate_cu_seqlens(cu_seqlens, sizes["T"])


def validate_cu_seqlens(cu_seqlens, total_tokens):
    """Raise ValueError unless cu_seqlens (S+1,) int32 starts at 0, strictly increases and ends at total_tokens.

    Copies cu_seqlens to the host (a device sync on CUDA). Shape and dtype are checked by ``validate_inputs``.
    """
    bounds = cu_seqlens.tolist()
    if bounds[0] != 0:
        raise ValueError(f"cu_seqlens must start at 0, got {bounds[0]} (cu_seqlens = {bounds})")
    if bounds[-1] != total_tokens:
        raise ValueError(
            f"cu_seqlens must end at T = {total_tokens} (the number of tokens in q), got {bounds[-1]} "
            f"(cu_seqlens = {bounds})"
        )
    lengths = [b - a for a, b in zip(bounds[:-1], bounds[1:])]
    if min(lengths) < 1:
        raise ValueError(f"cu_seqlens must be strictly increasing (every sequence >= 1 token), got {bounds}")
