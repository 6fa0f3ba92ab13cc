"""Last-token readout: final RMSNorm of a layer output, then logits against the tied embedding (spec Decisions, §6)."""
from __future__ import annotations

import torch

__all__ = ["readout_logits"]


def readout_logits(layer_output: torch.Tensor, final_norm_weight: torch.Tensor, embedding: torch.Tensor,
                   logits_scaling: float = 6.0, eps: float = 1e-5) -> torch.Tensor:
    """Logits of the last position of ``layer_output`` (the last real token under left padding).

    Args:
        layer_output: (b, L, hidden), any float dtype (bf16 in production).
        final_norm_weight: (hidden,) RMSNorm weight (``model.norm.weight``).
        embedding: (vocab, hidden) tied embedding (``model.embed_tokens.weight``).
    Returns:
        (b, vocab) float32: ``(RMSNorm_final(h[:, -1]).float() @ embedding.float().T) / logits_scaling``, where
        RMSNorm_final = ``weight * (h * rsqrt(mean(h², -1) + eps)).to(h.dtype)`` with fp32 statistics (spec §6).
    """
    for name, t, rank in (("layer_output", layer_output, 3), ("final_norm_weight", final_norm_weight, 1),
                          ("embedding", embedding, 2)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != rank:
            raise ValueError(f"{name} must have rank {rank}, got shape {tuple(t.shape)}")
    hidden = layer_output.shape[-1]
    if final_norm_weight.shape[0] != hidden or embedding.shape[1] != hidden:
        raise ValueError(f"hidden sizes disagree: layer_output {hidden}, final_norm_weight "
                         f"{final_norm_weight.shape[0]}, embedding {tuple(embedding.shape)}")
    if layer_output.shape[1] < 1:
        raise ValueError("layer_output has no positions")
    if not (logits_scaling > 0):
        raise ValueError(f"logits_scaling must be > 0, got {logits_scaling!r}")
    last = layer_output[:, -1]
    stats = last.to(torch.float32)
    normed = stats * torch.rsqrt(stats.pow(2).mean(-1, keepdim=True) + eps)
    normed = final_norm_weight * normed.to(last.dtype)
    return (normed.to(torch.float32) @ embedding.to(torch.float32).T) / logits_scaling
