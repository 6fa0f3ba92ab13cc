"""Per-layer decoding cache of the Granite Mamba-2 mixer (transformers 5.17 semantics, spec §3.2)."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ssmkit.granite.config import GraniteMambaConfig

__all__ = ["MambaCache"]


@dataclass
class MambaCache:
    """Conv and SSM state of one mixer layer for a batch of sequences.

    - ``conv_state``: (b, conv_dim, d_conv) in the model dtype (bf16): the last ``d_conv`` PRE-conv xBC columns
      (post in_proj, post input mask), oldest first, left-zero-padded when fewer tokens were seen (spec §3.2).
    - ``ssm_state``: (b, num_heads, head_dim, d_state) float32 (5.17 stores the fp32 final SSD state, §3.2).
    - ``has_previous_state``: True once a forward has written the cache (5.17 sets it during prefill).
    - ``seqlen_offset``: number of time positions (pads included) consumed so far.
    """

    conv_state: torch.Tensor
    ssm_state: torch.Tensor
    has_previous_state: bool = False
    seqlen_offset: int = 0

    @classmethod
    def zeros(cls, config: GraniteMambaConfig, batch: int, device=None,
              dtype: torch.dtype = torch.bfloat16) -> "MambaCache":
        """An empty cache (zeros, ``has_previous_state=False``); ``dtype`` is the conv_state (model) dtype."""
        if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
            raise ValueError(f"batch must be a positive int, got {batch!r}")
        conv = torch.zeros(batch, config.conv_dim, config.d_conv, device=device, dtype=dtype)
        ssm = torch.zeros(batch, config.num_heads, config.head_dim, config.d_state, device=device,
                          dtype=torch.float32)
        return cls(conv_state=conv, ssm_state=ssm)

    @property
    def batch_size(self) -> int:
        return self.conv_state.shape[0]

    def clone(self) -> "MambaCache":
        """A deep copy (new tensors) with the same flags."""
        return MambaCache(conv_state=self.conv_state.clone(), ssm_state=self.ssm_state.clone(),
                          has_previous_state=self.has_previous_state, seqlen_offset=self.seqlen_offset)

    def check_matches(self, config: GraniteMambaConfig, batch: int, device: torch.device,
                      dtype: torch.dtype) -> None:
        """Raise ValueError/TypeError unless this cache fits ``config``, ``batch`` rows, ``device`` and ``dtype``.

        ``dtype`` is the model dtype (expected for ``conv_state``); ``ssm_state`` must be float32.
        """
        if not isinstance(self.conv_state, torch.Tensor) or not isinstance(self.ssm_state, torch.Tensor):
            raise TypeError("MambaCache.conv_state and .ssm_state must be torch.Tensors")
        conv_shape = (batch, config.conv_dim, config.d_conv)
        ssm_shape = (batch, config.num_heads, config.head_dim, config.d_state)
        for name, tensor, shape in (("conv_state", self.conv_state, conv_shape),
                                    ("ssm_state", self.ssm_state, ssm_shape)):
            if tensor.shape[0] != batch:
                raise ValueError(f"cache batch mismatch: {name} has batch {tensor.shape[0]}, input has {batch}")
            if tuple(tensor.shape) != shape:
                raise ValueError(f"cache does not match the layer config: {name} has shape "
                                 f"{tuple(tensor.shape)}, expected {shape}")
            if tensor.device != device:
                raise ValueError(f"cache {name} is on {tensor.device}, the layer is on {device}")
        if self.conv_state.dtype != dtype:
            raise TypeError(f"cache conv_state dtype {self.conv_state.dtype} != model dtype {dtype}")
        if self.ssm_state.dtype != torch.float32:
            raise TypeError(f"cache ssm_state must be float32 (spec §3.2), got {self.ssm_state.dtype}")
