"""Run Granite workloads through a layer: build layers from a slice, make the inputs, run, read out.

Shared by ``granite verify`` and ``granite bench``. One *run* of a workload (``run_workload``) returns the
compared quantities as a dict of tensors:
- prefill: ``output`` (b, L, hidden); per continuation i (optional ``continue`` field) ``continue{i}.output``
  (b, Li, hidden); then the final ``conv_state`` (b, conv_dim, d_conv), ``ssm_state`` (b, H, P, N) fp32, and
  ``logits`` (b, vocab) fp32: the readout of the last call's last position;
- decode: ``prefix_output`` (b, prefix, hidden) of the cache-building prefill, ``output`` (b, steps, hidden) of
  the single-token steps, the final states, and ``logits`` (b * steps, vocab): the readout after every step.
Calls that continue from a cache must update it in place and return the same object (COMMON.md, the forward
contract); ``RunResult.cache_in_place`` records whether every such call did.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from ssmkit.harness.workloads import PREFILL, DecodeInputs, PrefillInputs, Workload, decode_inputs, prefill_inputs

DEFAULT_SLICE_SEED = 0


def default_slice(config=None):
    """The synthetic slice (``synthetic_slice``) of ``config`` (default: the real GraniteMambaConfig), seed 0."""
    from ssmkit.granite import GraniteMambaConfig, synthetic_slice

    return synthetic_slice(config if config is not None else GraniteMambaConfig(), DEFAULT_SLICE_SEED)


def build_layer(layer_cls: type, layer_slice, device, dtype: torch.dtype) -> nn.Module:
    """``layer_cls(config)`` moved to ``device``/``dtype`` with the slice's mixer weights loaded (strict), eval."""
    layer = layer_cls(layer_slice.config).to(device=device, dtype=dtype)
    layer.load_state_dict(layer_slice.mamba, strict=True)
    return layer.eval()


@dataclass
class Readout:
    """Final-norm weight (hidden,) and tied embedding (vocab, hidden) on the device, plus the config constants."""

    final_norm: torch.Tensor
    embedding: torch.Tensor
    logits_scaling: float
    eps: float

    @classmethod
    def from_slice(cls, layer_slice, device, dtype: torch.dtype | None = None) -> "Readout":
        """The slice's readout weights on ``device``, cast to ``dtype`` (None keeps the stored dtype)."""
        cfg = layer_slice.config
        return cls(layer_slice.final_norm.to(device=device, dtype=dtype),
                   layer_slice.embedding.to(device=device, dtype=dtype), cfg.logits_scaling, cfg.rms_norm_eps)

    def __call__(self, layer_output: torch.Tensor) -> torch.Tensor:
        """(b, L, hidden) -> (b, vocab) fp32 logits of the last position (``readout_logits``)."""
        from ssmkit.granite import readout_logits

        return readout_logits(layer_output, self.final_norm, self.embedding, logits_scaling=self.logits_scaling,
                              eps=self.eps)


@dataclass
class RunResult:
    """Quantities of one workload run (see the module docstring) and the in-place cache contract flag."""

    tensors: dict[str, torch.Tensor] = field(default_factory=dict)
    cache_in_place: bool = True


def make_inputs(w: Workload, hidden_size: int, device, dtype=torch.bfloat16, rotation: int = 0):
    """``PrefillInputs`` or ``DecodeInputs`` of workload ``w`` (see ``ssmkit.harness.workloads``)."""
    maker = prefill_inputs if w.kind == PREFILL else decode_inputs
    return maker(w, hidden_size, device, dtype, rotation)


def cast_inputs(inputs, dtype: torch.dtype):
    """The same inputs with every hidden-state tensor cast to ``dtype`` (masks unchanged)."""
    if isinstance(inputs, PrefillInputs):
        return PrefillInputs(inputs.hidden.to(dtype), inputs.mask, [c.to(dtype) for c in inputs.continuations])
    return DecodeInputs(inputs.prefix.to(dtype), [t.to(dtype) for t in inputs.tokens])


def input_tensors(inputs) -> list[torch.Tensor | None]:
    """Every tensor of ``inputs``, for digests (immutability checks)."""
    if isinstance(inputs, PrefillInputs):
        return [inputs.hidden, inputs.mask, *inputs.continuations]
    return [inputs.prefix, *inputs.tokens]


def _continue(layer: nn.Module, hidden: torch.Tensor, cache, result: RunResult, what: str):
    conv_ptr, ssm_ptr = cache.conv_state.data_ptr(), cache.ssm_state.data_ptr()
    out, returned = layer(hidden, cache=cache)
    if returned is not cache or returned.conv_state.data_ptr() != conv_ptr or returned.ssm_state.data_ptr() != ssm_ptr:
        result.cache_in_place = False
        returned = returned if returned is not None else cache
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(hidden.shape):
        raise ValueError(f"{what}: expected an output tensor of shape {tuple(hidden.shape)}, got "
                         f"{tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__}")
    return out, returned


def run_workload(layer: nn.Module, w: Workload, inputs, readout: Readout) -> RunResult:
    """Run workload ``w`` through ``layer`` (no autograd) and collect the compared quantities."""
    result = RunResult()
    t = result.tensors
    with torch.no_grad():
        if isinstance(inputs, PrefillInputs):
            out, cache = layer(inputs.hidden, cache=None, attention_mask=inputs.mask)
            t["output"] = out
            for i, hidden in enumerate(inputs.continuations):
                out, cache = _continue(layer, hidden, cache, result, f"continuation {i}")
                t[f"continue{i}.output"] = out
            logits = readout(out)
        else:
            t["prefix_output"], cache = layer(inputs.prefix, cache=None)
            outs = []
            for i, token in enumerate(inputs.tokens):
                out, cache = _continue(layer, token, cache, result, f"decode step {i}")
                outs.append(out)
            t["output"] = torch.cat(outs, dim=1)
            logits = torch.cat([readout(o) for o in outs], dim=0)
        t["conv_state"] = cache.conv_state.clone()
        t["ssm_state"] = cache.ssm_state.clone()
        t["logits"] = logits
    return result


def slice_from_path(path=None):
    """``ssmkit.granite.load_slice(path)``, or the default synthetic slice (real config, seed 0) when None."""
    if path is None:
        return default_slice()
    from ssmkit.granite import load_slice

    return load_slice(path)
