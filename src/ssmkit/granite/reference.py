"""ReferenceMambaLayer: an eager port of transformers 5.17's pure-PyTorch Granite Mamba-2 mixer.

The math, operation order and dtypes follow spec §2.1 (prefill and multi-token continuation), §3.1 (single-token
decode), §3.2 (cache) and §3.3 (padding). "Model dtype" is the dtype of the layer's weights (bf16 in production);
with float32 weights the same code runs "the same math in fp32" (every bf16 cast becomes a model-dtype cast).

Inference only: ``forward`` runs under ``torch.no_grad()``. On CUDA it also turns TF32 off for fp32 matmuls and
convolutions during the call (PyTorch enables TF32 for cuDNN convolutions by default), so the fp32 parts, and the
whole "same math in fp32" run, are IEEE fp32 like transformers' elementwise fp32 sums.

One deliberate difference from the transformers code: the chunked SSD (§2.1 step 9) contracts with einsums
instead of materialising the (b, chunks, 256, H, P, N) outer products, and runs its intra-chunk part over blocks
of chunks, so peak transient memory stays at a few GB for B=8 x 4096 and B=1 x 16384. The products, sums and
dtypes are the same; only the fp32 summation order differs.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ssmkit.granite.cache import MambaCache
from ssmkit.granite.config import GraniteMambaConfig

__all__ = [
    "ReferenceMambaLayer",
    "GatedRMSNorm",
    "ieee_fp32",
    "recurrent_mask",
    "MaskFacts",
    "mask_facts",
    "check_binary",
    "apply_padding_mask",
    "causal_conv1d_silu",
    "causal_conv1d_silu_update",
    "segment_sum",
    "ssd_chunked_scan",
    "selective_state_update",
]

# Bytes allowed for one (chunks, H, chunk, chunk) fp32 block of the intra-chunk SSD (about 4x that is live at once).
_SSD_BLOCK_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class MaskFacts:
    """What the forward needs to know of a (b, L) attention mask, read with one device-to-host copy.

    binary: every entry is 0 or 1. lengths: nonzero entries per row. left_padded: every row is zeros, then nonzeros.
    """

    binary: bool
    lengths: tuple[int, ...]
    left_padded: bool

    def all_ones(self, seq_len: int) -> bool:
        return self.binary and all(n == seq_len for n in self.lengths)


def mask_facts(attention_mask: torch.Tensor) -> MaskFacts:
    """``MaskFacts`` of a real (not complex) (b, L) mask: a few small device ops, then ONE device-to-host copy of
    b + 2 integers (each extra sync in a forward leaves the GPU idle while the host catches up; measured ~0.4 ms
    over the device time for a left-padded B=8 prefill with three of them, bench/granite/NOTES.md)."""
    real = attention_mask != 0
    flags = torch.stack([(attention_mask != real).any(), (real[:, :-1] > real[:, 1:]).any()])
    host = torch.cat([real.sum(1), flags.to(torch.int64)]).tolist()
    return MaskFacts(binary=not host[-2], lengths=tuple(host[:-2]), left_padded=not host[-1])


def _not_binary() -> ValueError:
    return ValueError("attention_mask must contain only 0 and 1 (1 = real token, 0 = left padding)")


def check_binary(facts: MaskFacts) -> MaskFacts:
    """``facts`` itself; the forward's ValueError when the mask they describe has values other than 0 and 1."""
    if not facts.binary:
        raise _not_binary()
    return facts


def recurrent_mask(attention_mask: torch.Tensor | None, seq_len: int,
                   facts: MaskFacts | None = None) -> torch.Tensor | None:
    """The padding mask the mixer sees, as transformers 5.17's ``create_recurrent_attention_mask`` (spec §3.3).

    ``attention_mask``: (b, seq_len) 0/1 or None; ``facts``: its ``mask_facts`` if already read (saves a sync).
    Returns None when there is no mask, when ``seq_len == 1`` (a single-token step is never padding) or when the
    mask is all ones; otherwise the mask itself.
    """
    if attention_mask is None or seq_len == 1:
        return None
    if facts.all_ones(seq_len) if facts is not None else bool(torch.all(attention_mask == 1)):
        return None
    return attention_mask


def apply_padding_mask(states: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """``states`` (b, L, d) times ``mask`` (b, L) per position, kept in ``states``' dtype (spec §2.1 steps 1, 7)."""
    if mask is None:
        return states
    return (states * mask[:, :, None]).to(states.dtype)


def causal_conv1d_silu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """Causal depthwise conv + SiLU over the time axis (spec §2.1 step 6, the 5.17 fallback).

    ``x``: (b, C, T); ``weight``: (C, 1, K); ``bias``: (C,) or None. The conv runs in the weight dtype with K-1
    zeros of left context, SiLU follows in the same dtype, and the result is cast to ``x``'s dtype: (b, C, T).
    """
    channels, _, width = weight.shape
    out = F.conv1d(x.to(weight.dtype), weight, bias, padding=width - 1, groups=channels)[:, :, : x.shape[-1]]
    return F.silu(out).to(x.dtype)


def causal_conv1d_silu_update(x: torch.Tensor, conv_state: torch.Tensor, weight: torch.Tensor,
                              bias: torch.Tensor | None) -> torch.Tensor:
    """One decode step of the causal conv + SiLU (spec §3.1 step 2), updating ``conv_state`` IN PLACE.

    ``x``: (b, C, 1) new pre-conv column; ``conv_state``: (b, C, K) last K pre-conv columns, oldest first.
    The window ``[conv_state, x]`` is cast to the weight dtype, its last K columns become the new state, and the
    conv of the window's last position (+ bias, SiLU) is returned cast to ``x``'s dtype: (b, C, 1).
    """
    channels, _, width = weight.shape
    window = torch.cat([conv_state, x], dim=-1).to(weight.dtype)
    conv_state.copy_(window[:, :, -width:])
    out = F.conv1d(window, weight, bias, padding=0, groups=channels)[:, :, -x.shape[-1]:]
    return F.silu(out).to(x.dtype)


def segment_sum(a: torch.Tensor) -> torch.Tensor:
    """(..., T) -> (..., T, T) with ``S[i, j] = a[j+1] + ... + a[i]`` for i >= j and -inf above the diagonal.

    Computed by a masked cumulative sum, not by differencing prefix sums (spec §2.1 step 9.7).
    """
    length = a.shape[-1]
    ones = torch.ones(length, length, dtype=torch.bool, device=a.device)
    below = torch.tril(ones, diagonal=-1)  # [k, j]: k > j
    terms = a[..., :, None].expand(*a.shape, length).masked_fill(~below, 0)  # terms[..., k, j] = a[k] if k > j
    return torch.cumsum(terms, dim=-2).masked_fill(~torch.tril(ones), -math.inf)


def _group_heads(t: torch.Tensor, dim: int, groups: int) -> torch.Tensor:
    """Split the head axis ``dim`` of ``t`` into (groups, heads_per_group)."""
    shape = list(t.shape)
    return t.reshape(shape[:dim] + [groups, shape[dim] // groups] + shape[dim + 1:])


def ssd_chunked_scan(x: torch.Tensor, dt: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                     D: torch.Tensor, dt_bias: torch.Tensor, chunk_size: int,
                     dt_limit: tuple[float, float] = (0.0, math.inf),
                     initial_state: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Chunked SSD scan of transformers 5.17's ``mamba2_chunk_scan`` fallback (spec §2.1 step 9).

    Args:
        x: (b, L, H, P) model dtype. dt: (b, L, H) raw dt, model dtype. A: (H,) float32 (= -exp(A_log)).
        B, C: (b, L, G, N) model dtype. D, dt_bias: (H,) parameters. initial_state: (b, H, P, N) or None (zeros).
    Returns:
        y: (b, L, H, P) float32 (incl. the D skip); final_state: (b, H, P, N) float32, the state after the last
        position of the time axis padded to a multiple of ``chunk_size`` (pads do not change it: x = 0, A*dt = 0).
    dt + dt_bias and softplus run in the model dtype (spec Decisions), then the clamp to ``dt_limit``; all the rest
    in float32.
    """
    batch, length, heads, head_dim = x.shape
    groups, d_state = B.shape[2], B.shape[3]
    dt = F.softplus(dt + dt_bias.to(dt.dtype))
    dt = torch.clamp(dt, min=dt_limit[0], max=dt_limit[1])
    pad = (chunk_size - length % chunk_size) % chunk_size
    chunks = (length + pad) // chunk_size

    def chunked(t: torch.Tensor) -> torch.Tensor:  # (b, L, ...) -> (b * chunks, chunk, ...), zero-padded at the end
        t = F.pad(t, (0, 0) * (t.dim() - 2) + (0, pad))
        return t.reshape(batch * chunks, chunk_size, *t.shape[2:])

    dtf = dt.float()
    x_bar = chunked(x.float() * dtf[..., None])  # (bc, l, H, P)
    a_bar = chunked(A.float() * dtf).transpose(1, 2)  # (bc, H, l)
    a_cum = torch.cumsum(a_bar, dim=-1)
    B_c, C_c = chunked(B.float()), chunked(C.float())  # (bc, l, G, N)

    # Steps 1-2 (intra-chunk output and chunk states), over blocks of chunks to bound the (k, H, l, l) temporaries.
    y_diag = torch.empty_like(x_bar)
    states = x_bar.new_empty(batch * chunks, heads, head_dim, d_state)
    block = max(1, _SSD_BLOCK_BYTES // (heads * chunk_size * chunk_size * 4))
    for s in range(0, batch * chunks, block):
        sl = slice(s, s + block)
        decay_in = torch.exp(segment_sum(a_bar[sl]))  # (k, H, l, s)
        scores = torch.einsum("klgn,ksgn->kgls", C_c[sl], B_c[sl])  # C·Bᵀ once per group
        mixing = _group_heads(decay_in, 1, groups) * scores[:, :, None]  # (k, G, H/G, l, s)
        y_diag[sl] = torch.einsum("khls,kshp->klhp", mixing.flatten(1, 2), x_bar[sl])
        del decay_in, mixing
        decay_out = torch.exp(a_cum[sl, :, -1:] - a_cum[sl])  # (k, H, l)
        b_decay = _group_heads(decay_out.transpose(1, 2), 2, groups)[..., None] * B_c[sl][:, :, :, None]
        states[sl] = torch.einsum("klhn,klhp->khpn", b_decay.flatten(2, 3), x_bar[sl])
        del b_decay

    # Step 3: inter-chunk recurrence, the initial state entering as chunk "-1".
    states = states.reshape(batch, chunks, heads, head_dim, d_state)
    start = (initial_state.to(torch.float32)[:, None] if initial_state is not None
             else states.new_zeros(batch, 1, heads, head_dim, d_state))
    states = torch.cat([start, states], dim=1)
    a_last = a_cum[:, :, -1].reshape(batch, chunks, heads).transpose(1, 2)  # (b, H, c)
    decay_chunk = torch.exp(segment_sum(F.pad(a_last, (1, 0))))  # (b, H, dst, src)
    states = torch.einsum("bhds,bshpn->bdhpn", decay_chunk, states)
    entering, final_state = states[:, :-1], states[:, -1]

    # Step 4: state -> output.
    entering = _group_heads(entering.reshape(batch * chunks, heads, head_dim, d_state), 1, groups)
    y_off = torch.einsum("klgn,kghpn->klghp", C_c, entering).flatten(2, 3)
    y_off = y_off * torch.exp(a_cum).transpose(1, 2)[..., None]
    y = (y_diag + y_off).reshape(batch, chunks * chunk_size, heads, head_dim)
    del y_diag, y_off, entering
    y = y + D[..., None] * F.pad(x.float(), (0, 0, 0, 0, 0, pad))
    return y[:, :length], final_state


def selective_state_update(state: torch.Tensor, x: torch.Tensor, dt: torch.Tensor, A: torch.Tensor,
                           B: torch.Tensor, C: torch.Tensor, D: torch.Tensor, dt_bias: torch.Tensor) -> torch.Tensor:
    """One decode step of the SSM (spec §3.1 step 4, 5.17's ``mamba2_selective_state_update`` fallback).

    ``state``: (b, H, P, N) float32, updated IN PLACE. ``x``: (b, H, P), ``dt``: (b, H) raw, ``B``, ``C``:
    (b, G, N), all model dtype. ``A``: (H,) float32. ``D``, ``dt_bias``: (H,). Returns y (b, H, P) in model dtype.
    dt + dt_bias, softplus, dB = dt*B, dBx = dB*x, the C readout and the D skip run in the model dtype; dA and the
    state update in float32. No time_step_limit clamp here (5.17 applies none in decode).
    """
    batch, heads, head_dim = x.shape
    groups, d_state = B.shape[1], B.shape[2]
    dt = dt[:, :, None].expand(batch, heads, head_dim)
    dt = F.softplus(dt + dt_bias[:, None].expand(heads, head_dim).to(dt.dtype))[..., None]  # (b, H, P, 1)
    dA = torch.exp(dt.float() * A.float()[:, None, None])  # (b, H, P, 1) float32, broadcast over N
    B_h = B.repeat_interleave(heads // groups, dim=1)[:, :, None, :]  # (b, H, 1, N)
    dBx = (dt * B_h) * x[..., None]  # model dtype
    new_state = state * dA + dBx
    state.copy_(new_state)
    C_h = C.repeat_interleave(heads // groups, dim=1)  # (b, H, N)
    y = torch.bmm(new_state.to(C.dtype).view(batch * heads, head_dim, d_state),
                  C_h.reshape(batch * heads, d_state, 1)).view(batch, heads, head_dim)
    y = (y + x * D[:, None].expand(heads, head_dim)).to(y.dtype)
    return y.to(x.dtype)


@contextlib.contextmanager
def ieee_fp32(enabled: bool = True):
    """Within the block, fp32 CUDA matmuls and cuDNN convolutions run in IEEE fp32 (no TF32); restored after."""
    if not enabled:
        yield
        return
    if hasattr(torch.backends.cudnn, "conv"):  # the fp32_precision API (torch >= 2.9)
        flags = [(torch.backends.cuda.matmul, "fp32_precision", "ieee"),
                 (torch.backends.cudnn.conv, "fp32_precision", "ieee")]
    else:
        flags = [(torch.backends.cuda.matmul, "allow_tf32", False), (torch.backends.cudnn, "allow_tf32", False)]
    saved = [getattr(owner, name) for owner, name, _ in flags]
    for owner, name, value in flags:
        setattr(owner, name, value)
    try:
        yield
    finally:
        for (owner, name, _), value in zip(flags, saved):
            setattr(owner, name, value)


class GatedRMSNorm(nn.Module):
    """Gated RMSNorm of 5.17 (spec §2.1 step 10): gate multiplies BEFORE the norm, mean over all channels.

    ``forward(y (..., I), gate (..., I))``: t = y.float() * silu(gate.float()); t *= rsqrt(mean(t², -1) + eps);
    returns ``weight * t.to(y.dtype)`` (float32 in prefill where y is fp32; model dtype in decode).
    """

    def __init__(self, size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, y: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        t = y.to(torch.float32) * F.silu(gate.to(torch.float32))
        t = t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * t.to(y.dtype)


class ReferenceMambaLayer(nn.Module):
    """Granite 4.0-H Mamba-2 mixer, eager PyTorch, transformers 5.17 semantics (spec §2.1, §3).

    Parameters carry transformers' names: ``in_proj.weight`` (in_proj_dim, hidden), ``conv1d.weight``
    (conv_dim, 1, d_conv), ``conv1d.bias`` (conv_dim,), ``dt_bias``, ``A_log``, ``D`` (H,), ``norm.weight``
    (intermediate,), ``out_proj.weight`` (hidden, intermediate). Initial values as 5.17's (A_log = log(1..H),
    D = dt_bias = 1); load real or synthetic weights with ``load_state_dict``.
    """

    def __init__(self, config: GraniteMambaConfig, layer_idx: int = 0) -> None:
        super().__init__()
        if not isinstance(config, GraniteMambaConfig):
            raise TypeError(f"config must be a GraniteMambaConfig, got {type(config).__name__}")
        self.config = config.validate()
        self.layer_idx = layer_idx
        c = config
        self.in_proj = nn.Linear(c.hidden_size, c.in_proj_dim, bias=c.proj_bias)
        self.conv1d = nn.Conv1d(c.conv_dim, c.conv_dim, kernel_size=c.d_conv, groups=c.conv_dim,
                                padding=c.d_conv - 1, bias=c.conv_bias)
        self.dt_bias = nn.Parameter(torch.ones(c.num_heads))
        self.A_log = nn.Parameter(torch.log(torch.arange(1, c.num_heads + 1, dtype=torch.float32)))
        self.D = nn.Parameter(torch.ones(c.num_heads))
        self.norm = GatedRMSNorm(c.intermediate_size, eps=c.rms_norm_eps)
        self.out_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=c.proj_bias)

    # ----------------------------------------------------------------------------------------- validation
    def check_forward_args(self, hidden_states: torch.Tensor, cache: MambaCache | None,
                           attention_mask: torch.Tensor | None) -> torch.Tensor | None:
        """Validate ``forward``'s arguments; return the mask the mixer applies (``recurrent_mask``) or None.

        Raises TypeError/ValueError naming what was expected and what was got: rank, hidden size, dtype or device
        different from the weights, mask shape/values/device, cache batch/config/dtype/device mismatch.
        """
        return self.check_forward_args_with_facts(hidden_states, cache, attention_mask)[0]

    def check_forward_args_with_facts(self, hidden_states: torch.Tensor, cache: MambaCache | None,
                                      attention_mask: torch.Tensor | None
                                      ) -> tuple[torch.Tensor | None, MaskFacts | None]:
        """``check_forward_args`` that also returns the mask's ``MaskFacts`` (None without a mask), read with the
        one device-to-host copy the value check needs, for callers that use the lengths too."""
        self.check_forward_layout(hidden_states, attention_mask)
        facts = None if attention_mask is None else self.checked_mask_facts(attention_mask)
        if cache is not None:
            if not isinstance(cache, MambaCache):
                raise TypeError(f"cache must be a MambaCache or None, got {type(cache).__name__}")
            cache.check_matches(self.config, hidden_states.shape[0], self.in_proj.weight.device,
                                self.in_proj.weight.dtype)
        return recurrent_mask(attention_mask, hidden_states.shape[1], facts), facts

    def check_forward_layout(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None) -> None:
        """The checks of ``check_forward_args`` that come before the mask's values (``checked_mask_facts``) and
        read no device data: the types, ranks, shapes, dtypes and devices of hidden_states and the mask."""
        weight = self.in_proj.weight
        if not isinstance(hidden_states, torch.Tensor):
            raise TypeError(f"hidden_states must be a torch.Tensor, got {type(hidden_states).__name__}")
        if hidden_states.dim() != 3:
            raise ValueError(f"hidden_states must have shape (batch, seq_len, {self.config.hidden_size}), "
                             f"got rank {hidden_states.dim()} shape {tuple(hidden_states.shape)}")
        batch, seq_len, hidden = hidden_states.shape
        if hidden != self.config.hidden_size:
            raise ValueError(f"hidden_states last dim must be hidden_size={self.config.hidden_size}, got {hidden}")
        if batch < 1 or seq_len < 1:
            raise ValueError(f"hidden_states must have batch >= 1 and seq_len >= 1, got {tuple(hidden_states.shape)}")
        if hidden_states.dtype != weight.dtype:
            raise TypeError(f"hidden_states dtype {hidden_states.dtype} does not match the layer weights "
                            f"({weight.dtype})")
        if hidden_states.device != weight.device:
            raise ValueError(f"hidden_states is on {hidden_states.device}, the layer weights on {weight.device}")
        if attention_mask is not None:
            if not isinstance(attention_mask, torch.Tensor):
                raise TypeError(f"attention_mask must be a torch.Tensor or None, got {type(attention_mask).__name__}")
            if tuple(attention_mask.shape) != (batch, seq_len):
                raise ValueError(f"attention_mask must have shape (batch, seq_len) = {(batch, seq_len)}, "
                                 f"got {tuple(attention_mask.shape)}")
            if attention_mask.device != weight.device:
                raise ValueError(f"attention_mask is on {attention_mask.device}, the layer on {weight.device}")
            if attention_mask.is_complex():
                raise _not_binary()

    def checked_mask_facts(self, attention_mask: torch.Tensor) -> MaskFacts:
        """The ``MaskFacts`` of a mask that passed ``check_forward_layout``; ValueError unless its values are 0/1."""
        return check_binary(self._mask_facts(attention_mask))

    def _mask_facts(self, attention_mask: torch.Tensor) -> MaskFacts:
        """``mask_facts`` of a real mask (a subclass may read the same facts another way)."""
        return mask_facts(attention_mask)

    # ----------------------------------------------------------------------------------------- forward
    def forward(self, hidden_states: torch.Tensor, cache: MambaCache | None = None,
                attention_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, MambaCache]:
        """Run the mixer on ``hidden_states`` (b, L, hidden) in the model dtype.

        ``cache`` None (or one without previous state): prefill from the zero state; a new cache is returned
        (a given empty cache is filled in place). ``cache.has_previous_state``: continue from it, L == 1 by the
        decode recurrence (§3.1), L > 1 by the chunked scan with the cached conv columns and SSM state (§3.2);
        the cache's tensors are updated in place and the same cache object is returned. ``attention_mask``:
        (b, L) 0/1 with padding on the left, or None; it is ignored for L == 1 (as in 5.17).
        Returns (output (b, L, hidden) model dtype, cache).
        """
        mask = self.check_forward_args(hidden_states, cache, attention_mask)
        with torch.no_grad(), ieee_fp32(hidden_states.is_cuda):
            return self._forward(hidden_states, cache, mask)

    def _forward(self, hidden_states: torch.Tensor, cache: MambaCache | None,
                 mask: torch.Tensor | None) -> tuple[torch.Tensor, MambaCache]:
        c = self.config
        batch, seq_len, _ = hidden_states.shape
        dtype = hidden_states.dtype
        continuing = cache is not None and cache.has_previous_state
        if cache is None:
            cache = MambaCache.zeros(c, batch, device=hidden_states.device, dtype=dtype)

        zxbcdt = self.in_proj(apply_padding_mask(hidden_states, mask))
        A = -torch.exp(self.A_log.float())
        gate, xBC, dt = zxbcdt.split([c.intermediate_size, c.conv_dim, c.num_heads], dim=-1)
        xBC = xBC.transpose(1, 2)  # (b, conv_dim, L)

        if continuing and seq_len == 1:
            xBC = causal_conv1d_silu_update(xBC, cache.conv_state, self.conv1d.weight, self.conv1d.bias)
        else:
            if continuing:
                window = torch.cat([cache.conv_state, xBC], dim=-1)
            else:
                window = F.pad(xBC, (max(0, c.d_conv - seq_len), 0))
            cache.conv_state.copy_(window[:, :, -c.d_conv:])
            xBC = causal_conv1d_silu(window, self.conv1d.weight, self.conv1d.bias)[:, :, -seq_len:]
        xBC = apply_padding_mask(xBC.transpose(1, 2), mask)
        x, B, C = xBC.split([c.intermediate_size, c.n_groups * c.d_state, c.n_groups * c.d_state], dim=-1)

        if continuing and seq_len == 1:
            y = selective_state_update(cache.ssm_state, x.reshape(batch, c.num_heads, c.head_dim), dt[:, 0],
                                       A, B.reshape(batch, c.n_groups, c.d_state),
                                       C.reshape(batch, c.n_groups, c.d_state), self.D, self.dt_bias)
        else:
            y, final_state = ssd_chunked_scan(
                x.reshape(batch, seq_len, c.num_heads, c.head_dim), dt, A,
                B.reshape(batch, seq_len, c.n_groups, c.d_state), C.reshape(batch, seq_len, c.n_groups, c.d_state),
                self.D, self.dt_bias, c.chunk_size, c.time_step_limit,
                initial_state=cache.ssm_state if continuing else None)
            cache.ssm_state.copy_(final_state)
        y = self.norm(y.reshape(batch, seq_len, c.intermediate_size), gate)
        out = self.out_proj(y.to(dtype))
        cache.seqlen_offset = cache.seqlen_offset + seq_len if continuing else seq_len
        cache.has_previous_state = True
        return out, cache
