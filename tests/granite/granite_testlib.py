"""Helpers shared by the Granite reference tests: weights, inputs, transformers' layer, a float64 oracle.

The float64 oracle runs the mixer token by token (spec §2.1 math, no chunking, no bf16 roundings), so it is
independent of the chunked SSD of ``ssmkit.granite.reference``.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ssmkit.granite import GraniteMambaConfig, ReferenceMambaLayer, synthetic_slice

FP32_EPS = torch.finfo(torch.float32).eps


def make_layer(config: GraniteMambaConfig, dtype: torch.dtype, seed: int = 0) -> ReferenceMambaLayer:
    """A reference layer with the synthetic slice's weights (seeded), in ``dtype``, eval mode."""
    layer = ReferenceMambaLayer(config).to(dtype).eval()
    weights = synthetic_slice(config, seed).mamba if config.vocab_size <= 4096 else _mamba_only(config, seed)
    layer.load_state_dict(weights)
    return layer


def _mamba_only(config: GraniteMambaConfig, seed: int) -> dict:
    """Synthetic mixer weights at a config with a large vocab, without drawing the big embedding."""
    small = GraniteMambaConfig.from_dict({**config.to_dict(), "vocab_size": 8})
    return synthetic_slice(small, seed).mamba


def left_padding_mask(lengths: list[int], length: int) -> torch.Tensor:
    """(b, length) int64 mask: zeros on the left, ``lengths[i]`` ones on the right of row i."""
    mask = torch.zeros(len(lengths), length, dtype=torch.long)
    for row, n in enumerate(lengths):
        mask[row, length - n:] = 1
    return mask


def random_hidden(batch: int, length: int, hidden: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(batch, length, hidden, generator=gen).to(dtype)


def bf16_ulp(t: torch.Tensor) -> torch.Tensor:
    """Spacing of bf16 numbers at |t| (float32), i.e. one unit in the last place; subnormals ignored."""
    mag = t.float().abs().clamp_min(torch.finfo(torch.bfloat16).tiny)
    return torch.exp2(torch.floor(torch.log2(mag)) - 7)


# ------------------------------------------------------------------------------------------ transformers' layer
def hf_config(config: GraniteMambaConfig):
    from transformers import GraniteMoeHybridConfig

    return GraniteMoeHybridConfig(
        hidden_size=config.hidden_size, mamba_n_heads=config.num_heads, mamba_d_head=config.head_dim,
        mamba_d_state=config.d_state, mamba_n_groups=config.n_groups, mamba_d_conv=config.d_conv,
        mamba_expand=config.expand, mamba_chunk_size=config.chunk_size, mamba_conv_bias=config.conv_bias,
        mamba_proj_bias=config.proj_bias, rms_norm_eps=config.rms_norm_eps, vocab_size=config.vocab_size,
        logits_scaling=config.logits_scaling, tie_word_embeddings=config.tie_word_embeddings,
        time_step_limit=config.time_step_limit, num_hidden_layers=1, layer_types=["mamba"],
        num_attention_heads=4, num_key_value_heads=4, num_local_experts=0, num_experts_per_tok=0,
        intermediate_size=64, shared_intermediate_size=64)


class HFMixer:
    """transformers 5.17's GraniteMoeHybridMambaLayer with our layer's weights, its DynamicCache and the mask the
    model would build (``create_recurrent_attention_mask``). ``step`` returns (output, conv_state, ssm_state) and
    records the out_proj input in ``last_out_proj_input``."""

    def __init__(self, layer: ReferenceMambaLayer) -> None:
        import transformers
        from transformers.cache_utils import DynamicCache
        from transformers.models.granitemoehybrid.modeling_granitemoehybrid import GraniteMoeHybridMambaLayer

        transformers.logging.set_verbosity_error()
        self.hf_config = hf_config(layer.config)
        dtype = layer.in_proj.weight.dtype
        self.module = GraniteMoeHybridMambaLayer(self.hf_config, 0).to(dtype).eval()
        missing = self.module.load_state_dict(layer.state_dict(), strict=True)
        assert not missing.missing_keys and not missing.unexpected_keys
        self.cache = DynamicCache(config=self.hf_config)
        self.last_out_proj_input = None
        self.module.out_proj.register_forward_pre_hook(self._record)

    def _record(self, _module, args):
        self.last_out_proj_input = args[0].detach().clone()

    def step(self, hidden: torch.Tensor, attention_mask: torch.Tensor | None = None):
        from transformers.masking_utils import create_recurrent_attention_mask

        mask = create_recurrent_attention_mask(self.hf_config, hidden, attention_mask)
        with torch.no_grad():
            out = self.module(hidden, cache_params=self.cache, attention_mask=mask)
        layer_cache = self.cache.layers[0]
        return out, layer_cache.conv_states[0].clone(), layer_cache.recurrent_states[0].clone()


def record_out_proj_input(layer: ReferenceMambaLayer) -> dict:
    """Register a hook storing our layer's out_proj input under key "u" of the returned dict."""
    store = {}
    layer.out_proj.register_forward_pre_hook(lambda _m, args: store.__setitem__("u", args[0].detach().clone()))
    return store


# ------------------------------------------------------------------------------------------ float64 oracle
def mixer_float64(layer: ReferenceMambaLayer, hidden: torch.Tensor, mask: torch.Tensor | None = None,
                  conv_state: torch.Tensor | None = None, ssm_state: torch.Tensor | None = None):
    """The mixer in float64, token by token (spec §2.1 math with exact arithmetic in place of bf16 casts).

    hidden (b, L, hidden); mask (b, L) or None (applied to the input and after conv+SiLU, for any L);
    conv_state (b, conv_dim, K) pre-conv history or None (zeros); ssm_state (b, H, P, N) or None (zeros).
    Returns (out (b, L, hidden), new conv_state (b, conv_dim, K), new ssm_state (b, H, P, N)), float64.
    """
    c = layer.config
    p = {k: v.detach().double() for k, v in layer.state_dict().items()}
    h = hidden.double()
    b, L, _ = h.shape
    m = torch.ones(b, L, dtype=torch.float64) if mask is None else mask.double()
    h = h * m[:, :, None]
    zxbcdt = h @ p["in_proj.weight"].T + (p["in_proj.bias"] if c.proj_bias else 0)
    z, xbc, dt_raw = zxbcdt.split([c.intermediate_size, c.conv_dim, c.num_heads], dim=-1)
    history = torch.zeros(b, c.conv_dim, c.d_conv, dtype=torch.float64) if conv_state is None else conv_state.double()
    full = torch.cat([history, xbc.transpose(1, 2)], dim=-1)  # (b, C, K + L)
    w = p["conv1d.weight"][:, 0]  # (C, K), tap K-1 = newest
    conv = torch.stack([(full[:, :, t + 1: t + 1 + c.d_conv] * w).sum(-1) for t in range(L)], dim=-1)
    if c.conv_bias:
        conv = conv + p["conv1d.bias"][:, None]
    xbc = F.silu(conv).transpose(1, 2) * m[:, :, None]
    x, B, C = xbc.split([c.intermediate_size, c.n_groups * c.d_state, c.n_groups * c.d_state], dim=-1)
    x = x.reshape(b, L, c.num_heads, c.head_dim)
    heads_per_group = c.num_heads // c.n_groups
    B = B.reshape(b, L, c.n_groups, c.d_state).repeat_interleave(heads_per_group, dim=2)
    C = C.reshape(b, L, c.n_groups, c.d_state).repeat_interleave(heads_per_group, dim=2)
    dt = F.softplus(dt_raw + p["dt_bias"]).clamp(*c.time_step_limit)
    A = -torch.exp(p["A_log"])
    S = torch.zeros(b, c.num_heads, c.head_dim, c.d_state, dtype=torch.float64) if ssm_state is None \
        else ssm_state.double().clone()
    decay = torch.exp(dt * A)  # (b, L, H)
    dt_x = dt[..., None] * x  # (b, L, H, P)
    ys = []
    for t in range(L):
        S.mul_(decay[:, t, :, None, None]).add_(torch.einsum("bhp,bhn->bhpn", dt_x[:, t], B[:, t]))
        ys.append(torch.einsum("bhpn,bhn->bhp", S, C[:, t]) + p["D"][:, None] * x[:, t])
    y = torch.stack(ys, dim=1).reshape(b, L, c.intermediate_size)
    g = y * F.silu(z)
    g = g / torch.sqrt((g * g).mean(-1, keepdim=True) + c.rms_norm_eps) * p["norm.weight"]
    out = g @ p["out_proj.weight"].T + (p["out_proj.bias"] if c.proj_bias else 0)
    return out, full[:, :, -c.d_conv:], S


def max_rel_err(got: torch.Tensor, want: torch.Tensor) -> float:
    """max |got - want| / max |want| (float64)."""
    diff = (got.double() - want.double()).abs().max().item()
    scale = want.double().abs().max().item()
    return diff / scale if scale > 0 else (0.0 if diff == 0 else math.inf)
