"""FastMambaLayer: ReferenceMambaLayer's contract on Triton kernels (single-token decode fused, CUDA-graphed).

Same constructor, parameters, forward signature, input validation (the reference's ``check_forward_args``) and
cache semantics as ``ReferenceMambaLayer`` (spec §2.1, §3). Inference only: the kernels carry no autograd, so the
forward runs under ``torch.no_grad()``.

Paths:
- Decode (cache with previous state, L == 1): in_proj (cuBLAS) -> ``granite_decode_step`` (two Triton kernels:
  conv + dt + state update + gate, then RMSNorm + conv-state roll) -> out_proj. On CUDA the whole step is one
  CUDA graph per (batch, cache tensors' addresses and strides, dtype, device), captured on first use and replayed
  after; the caller's hidden states are copied into the graph's input buffer and the output is cloned out of it,
  so nothing the caller holds aliases the graph's buffers. Elsewhere (CPU under TRITON_INTERPRET=1, or while the
  caller is capturing its own graph) the same kernels run eagerly.
- Prefill and multi-token continuation: the reference forward (the prefill kernels are not wired in yet).
- Anything the kernels do not handle (non-CUDA tensors without TRITON_INTERPRET=1, unsupported dtypes or sizes):
  the reference forward, with a warning the first time each reason occurs on a layer.
"""
from __future__ import annotations

import os
import warnings
from collections import OrderedDict

import torch
import torch.nn.functional as F

from ssmkit.granite.cache import MambaCache
from ssmkit.granite.config import GraniteMambaConfig
from ssmkit.granite.reference import ReferenceMambaLayer
from ssmkit.kernels.granite.ssd_decode import granite_decode_step

__all__ = ["FastMambaLayer"]

_KERNEL_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
# Decode graphs kept per layer (one per batch size and cache object in use); the oldest is dropped beyond this.
_MAX_DECODE_GRAPHS = 16


def _pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


class _DecodeGraph:
    """A captured decode step: static input (b, 1, hidden) -> static output (b, 1, hidden), caches updated."""

    def __init__(self, graph: torch.cuda.CUDAGraph, static_in: torch.Tensor, static_out: torch.Tensor) -> None:
        self.graph = graph
        self.static_in = static_in
        self.static_out = static_out

    def run(self, hidden_states: torch.Tensor) -> torch.Tensor:
        self.static_in.copy_(hidden_states)
        self.graph.replay()
        return self.static_out.clone()


class FastMambaLayer(ReferenceMambaLayer):
    """Granite Mamba-2 mixer on Triton kernels; drop-in for ``ReferenceMambaLayer`` (same forward contract).

    ``use_cuda_graphs`` (default True) can be set False to run the CUDA decode step eagerly.
    """

    def __init__(self, config: GraniteMambaConfig, layer_idx: int = 0) -> None:
        super().__init__(config, layer_idx)
        self.use_cuda_graphs = True
        self._decode_graphs: OrderedDict[tuple, _DecodeGraph] = OrderedDict()
        self._warned: set[str] = set()
        c = self.config
        self._config_problem = None
        if not all(_pow2(v) for v in (c.head_dim, c.d_state, c.d_conv)) or c.d_conv < 2:
            self._config_problem = (f"head_dim, d_state and d_conv must be powers of two (d_conv >= 2) for the "
                                    f"kernels, got {c.head_dim}, {c.d_state}, {c.d_conv}")

    # ----------------------------------------------------------------------------------------- dispatch
    def _unsupported(self, hidden_states: torch.Tensor) -> str | None:
        """Why the kernels cannot run this call (None when they can)."""
        if self._config_problem is not None:
            return self._config_problem
        if hidden_states.dtype not in _KERNEL_DTYPES:
            return f"the kernels support {_KERNEL_DTYPES}, got {hidden_states.dtype}"
        if hidden_states.device.type != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
            return (f"Triton kernels need CUDA tensors (or TRITON_INTERPRET=1 on the CPU), got device "
                    f"{hidden_states.device}")
        return None

    def _warn_once(self, reason: str) -> None:
        if reason not in self._warned:
            self._warned.add(reason)
            warnings.warn(f"FastMambaLayer falls back to the reference forward: {reason}", RuntimeWarning,
                          stacklevel=3)

    def forward(self, hidden_states: torch.Tensor, cache: MambaCache | None = None,
                attention_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, MambaCache]:
        """Same contract as ``ReferenceMambaLayer.forward``: (output (b, L, hidden) model dtype, cache)."""
        self.check_forward_args(hidden_states, cache, attention_mask)
        reason = self._unsupported(hidden_states)
        if reason is not None:
            self._warn_once(reason)
            return super().forward(hidden_states, cache, attention_mask)
        if cache is not None and cache.has_previous_state and hidden_states.shape[1] == 1:
            with torch.no_grad():
                out = self._decode(hidden_states, cache)
            cache.seqlen_offset += 1
            return out, cache
        return super().forward(hidden_states, cache, attention_mask)

    # ----------------------------------------------------------------------------------------- decode
    def _decode_math(self, hidden_states: torch.Tensor, conv_state: torch.Tensor,
                     ssm_state: torch.Tensor) -> torch.Tensor:
        """in_proj -> fused decode kernels -> out_proj for (b, 1, hidden); updates the two states in place."""
        zxbcdt = F.linear(hidden_states[:, 0], self.in_proj.weight, self.in_proj.bias)
        y = granite_decode_step(zxbcdt, conv_state, ssm_state, self.conv1d.weight, self.conv1d.bias, self.dt_bias,
                                self.A_log, self.D, self.norm.weight, self.config.rms_norm_eps)
        return F.linear(y, self.out_proj.weight, self.out_proj.bias)[:, None]

    def _decode(self, hidden_states: torch.Tensor, cache: MambaCache) -> torch.Tensor:
        conv, ssm = cache.conv_state, cache.ssm_state
        if (not self.use_cuda_graphs or hidden_states.device.type != "cuda"
                or torch.cuda.is_current_stream_capturing()):
            return self._decode_math(hidden_states, conv, ssm)
        key = (hidden_states.shape[0], hidden_states.dtype, hidden_states.device, conv.data_ptr(), conv.stride(),
               ssm.data_ptr(), ssm.stride())
        entry = self._decode_graphs.get(key)
        if entry is None:
            entry = self._capture_decode(hidden_states, cache)
            self._decode_graphs[key] = entry
            if len(self._decode_graphs) > _MAX_DECODE_GRAPHS:
                self._decode_graphs.popitem(last=False)
        return entry.run(hidden_states)

    def _capture_decode(self, hidden_states: torch.Tensor, cache: MambaCache) -> _DecodeGraph:
        """Capture the decode step on ``cache``'s tensors. The warm-up (Triton compile, cuBLAS set-up) runs on
        copies of the cache, so capturing leaves the caller's cache untouched (captured kernels do not run)."""
        device = hidden_states.device
        with torch.inference_mode(False):  # buffers the caller may later update in place outside inference mode
            static_in = torch.randn_like(hidden_states, memory_format=torch.contiguous_format)
            scratch = cache.clone()
            side = torch.cuda.Stream(device)
            side.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(side):
                self._decode_math(static_in, scratch.conv_state, scratch.ssm_state)
            torch.cuda.current_stream(device).wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_out = self._decode_math(static_in, cache.conv_state, cache.ssm_state)
        return _DecodeGraph(graph, static_in, static_out)

    def _apply(self, fn, *args, **kwargs):
        # .to()/.cuda()/.half() move the parameters: the captured graphs point at the old ones.
        self._decode_graphs.clear()
        return super()._apply(fn, *args, **kwargs)
