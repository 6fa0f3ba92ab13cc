"""Issue 5's VLLM anchor as a Granite candidate: the layer composed from vLLM 0.33's Mamba-2 Triton kernels.

`ssmkit granite verify / bench --candidate bench/granite_vllm_candidate.py` check and time it on the same machine as
the fast layer (the issue's VLLM column was measured on an H200). The kernels come from .anchors/ (`bash
bench/anchor_setup.sh vllm`, never committed; `vllm_kernels.py`), called as vLLM's Mamba-2 mixer calls them
(`mamba_mixer2.py`): a prefill on the batch's real tokens packed one sequence after another (vLLM's engine never
sees pads), in_proj, `causal_conv1d_fn` (varlen, query_start_loc), `mamba_chunk_scan_combined_varlen` (dt softplus,
D, fp32 states written into the cache), `rms_norm_gated` (the gate before the norm), out_proj; a decode step as
in_proj, `causal_conv1d_update`, `selective_state_update` (fp32 state, updated in place), `rms_norm_gated`,
out_proj. With ``use_cuda_graphs`` (default) the decode step is one CUDA graph per (batch, cache tensors), as vLLM's
CUDA-graph runner replays a decode step, and a prefill from the zero state one per (shape, lengths) with the input
copied in and the output and states copied out (the issue's "VLLM in a CUDA graph" column). Same constructor,
parameters and checks as ``ReferenceMambaLayer`` (this is its subclass).

Glue that vLLM's engine does elsewhere is done here with torch ops: the real tokens' gather and the output's scatter
(left padding: row b's last lengths[b] positions; none without pads); the per-step metadata its attention-metadata builder makes (the
SSD's chunk metadata, each sequence cut into chunks from its first token, and the conv kernel's program map), here
built once per lengths and kept (``_metadata``); and the cache's conv_state, which holds the last d_conv pre-conv
columns (``MambaCache``) where vLLM keeps d_conv - 1: the prefill's conv kernel gets its layout's columns and the
cache's are gathered from the tokens, the decode's gets a view of the last d_conv - 1 after one small copy of a
column (a graph node vLLM's layout does not need). A mask that is not left padding takes the reference forward;
continuations run eagerly. Checked on the CPU by bench/granite_vllm_smoke.py (float32, interpreter, eager and
through the graph paths with a stand-in capture), on the GPU by `granite verify`.
"""
import functools
import sys
import types
import warnings
from collections import OrderedDict
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vllm_kernels import load  # noqa: E402

from ssmkit.granite.cache import MambaCache  # noqa: E402
from ssmkit.kernels.common.mapped_io import capture_graph  # noqa: E402
from ssmkit.granite.reference import ReferenceMambaLayer  # noqa: E402

__all__ = ["CandidateBlock"]

_OPS = []  # the loaded kernels (loaded on first use: importing this file needs no anchor)


def _ops():
    if not _OPS:
        _OPS.append(load())
    return _OPS[0]


_CONV_BLOCK_M = 8  # the token block of vLLM's causal_conv1d_fn launch
_MAX_PREFILL_GRAPHS = 4  # (a graph keeps its static buffers and memory pool: ~1 GB at L = 16384)


@functools.lru_cache(maxsize=16)
def _metadata(lengths: tuple[int, ...], width: int, chunk: int, d_conv: int,
              device: torch.device) -> types.SimpleNamespace:
    """Index tensors of a prefill of a (b, width) left-padded batch with these real-token counts, built once per key:
    what vLLM's engine builds per step for packed sequences (its attention-metadata builder): query_start_loc
    (b + 1,), the SSD's chunk metadata (cu_chunk_seqlens (nchunks + 1,), seq_idx (nchunks,), last_chunk_indices
    (b,), int32; each sequence cut into chunks from its first token), the conv kernel's program map (``conv``:
    nums_dict, batch_ptr, token_chunk_offset_ptr: (sequence, token block) per program), slots (b,); and the glue's:
    ``rows`` (the real tokens' rows of the (b * width) flattened batch), ``last`` (b, d_conv) each row's last d_conv
    positions relative to its first real token (negative: before it), ``last_rows`` their packed rows (clamped).
    Built from host ints only, so a prefill that uses them can be captured in a CUDA graph."""
    bounds, seq_idx, last_chunk, start = [0], [], [], 0
    for s, n in enumerate(lengths):
        for c0 in range(0, n, chunk):
            bounds.append(start + min(c0 + chunk, n))
            seq_idx.append(s)
        last_chunk.append(len(seq_idx) - 1)
        start += n
    blocks = [-(-n // _CONV_BLOCK_M) for n in lengths]
    starts = [sum(lengths[:r]) for r in range(len(lengths) + 1)]
    last = [[n - d_conv + j for j in range(d_conv)] for n in lengths]

    def ints(values, dtype=torch.int32):
        return torch.tensor(values, dtype=dtype, device=device)

    batch_ptr = ints([s for s, k in enumerate(blocks) for _ in range(k)])
    offset_ptr = ints([j for k in blocks for j in range(k)])
    conv = types.SimpleNamespace(
        nums_dict={_CONV_BLOCK_M: {"tot": len(batch_ptr), "mlist": batch_ptr, "mlist_len": len(batch_ptr),
                                   "offsetlist": offset_ptr, "batch_ptr": batch_ptr,
                                   "token_chunk_offset_ptr": offset_ptr}},
        batch_ptr=batch_ptr, token_chunk_offset_ptr=offset_ptr)
    return types.SimpleNamespace(
        query_start_loc=ints(starts), cu_chunk_seqlens=ints(bounds), seq_idx=ints(seq_idx),
        last_chunk_indices=ints(last_chunk), conv=conv, slots=ints(list(range(len(lengths)))),
        rows=ints([r * width + p for r, n in enumerate(lengths) for p in range(width - n, width)], torch.int64),
        last=ints(last, torch.int64),
        last_rows=ints([[starts[r] + max(p, 0) for p in pos] for r, pos in enumerate(last)], torch.int64))


class CandidateBlock(ReferenceMambaLayer):
    """The Granite mixer on vLLM 0.33's Mamba-2 kernels (module docstring); ``use_cuda_graphs``: CUDA graphs of the
    decode step and of prefills from the zero state."""

    def __init__(self, config, layer_idx: int = 0) -> None:
        super().__init__(config, layer_idx)
        self.use_cuda_graphs = True
        self._decode_graphs: dict[tuple, tuple] = {}
        self._prefill_graphs: OrderedDict[tuple, tuple] = OrderedDict()
        self._prefill_capture_failed = False

    def _graphs_apply(self, hidden_states: torch.Tensor) -> bool:
        return (self.use_cuda_graphs and hidden_states.is_cuda
                and not torch.cuda.is_current_stream_capturing())

    def forward(self, hidden_states: torch.Tensor, cache: MambaCache | None = None,
                attention_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, MambaCache]:
        mask, facts = self.check_forward_args_with_facts(hidden_states, cache, attention_mask)
        if mask is not None and not facts.left_padded:
            return super().forward(hidden_states, cache, attention_mask)
        b, length, _ = hidden_states.shape
        with torch.no_grad():
            if cache is not None and cache.has_previous_state and length == 1:
                out = self._decode(hidden_states, cache)
                cache.seqlen_offset += 1
                return out, cache
            lengths = list(facts.lengths) if mask is not None else [length] * b
            continuing = cache is not None and cache.has_previous_state
            done = (self._prefill_graph(hidden_states, cache, lengths)
                    if not continuing and self._graphs_apply(hidden_states) else None)
            if done is not None:
                out, cache = done
            else:
                if cache is None:
                    cache = MambaCache.zeros(self.config, b, device=hidden_states.device, dtype=hidden_states.dtype)
                out = self._prefill(hidden_states, cache, lengths, continuing)
        cache.seqlen_offset = cache.seqlen_offset + length if continuing else length
        cache.has_previous_state = True
        return out, cache

    def _split(self, zxbcdt: torch.Tensor):
        c = self.config
        return zxbcdt.split([c.intermediate_size, c.conv_dim, c.num_heads], dim=-1)

    def _prefill(self, hidden_states: torch.Tensor, cache: MambaCache, lengths: list[int],
                 continuing: bool) -> torch.Tensor:
        """The real tokens through vLLM's prefill kernels; writes the cache; returns (b, L, hidden), 0 at pads. No
        host-to-device copy (``_metadata``): a call from the zero state can be captured (``_prefill_graph``)."""
        c, ops = self.config, _ops()
        b, length, hidden = hidden_states.shape
        dev = hidden_states.device
        meta = _metadata(tuple(lengths), length, c.chunk_size, c.d_conv, dev)
        padded = sum(lengths) < b * length  # (without pads the tokens are already packed: no gather, no scatter)
        tokens = hidden_states.reshape(b * length, hidden)
        zxbcdt = F.linear(tokens.index_select(0, meta.rows) if padded else tokens, self.in_proj.weight)
        gate, xbc, dt = self._split(zxbcdt)
        total = zxbcdt.shape[0]
        old_conv = cache.conv_state.clone() if continuing else None  # (the cache's last d_conv columns)
        conv = ops.causal_conv1d_fn(
            xbc.transpose(0, 1), self.conv1d.weight.squeeze(1), self.conv1d.bias,
            conv_states=old_conv[:, :, 1:].contiguous() if continuing else cache.conv_state[:, :, 1:].clone(),
            query_start_loc=meta.query_start_loc, cache_indices=meta.slots,
            has_initial_state=torch.full((b,), continuing, dtype=torch.bool, device=dev), activation="silu",
            null_block_id=None, metadata=meta.conv).transpose(0, 1)  # (vLLM's layout: the last d_conv - 1 columns)
        self._store_conv_state(cache, old_conv, xbc, meta)
        x, bmat, cmat = conv.split([c.intermediate_size, c.n_groups * c.d_state, c.n_groups * c.d_state], dim=-1)
        y = torch.empty(total, c.num_heads, c.head_dim, device=dev, dtype=hidden_states.dtype)
        ops.mamba_chunk_scan_combined_varlen(
            x.reshape(total, c.num_heads, c.head_dim), dt, -torch.exp(self.A_log.float()),
            bmat.reshape(total, c.n_groups, c.d_state), cmat.reshape(total, c.n_groups, c.d_state), c.chunk_size,
            cu_seqlens=meta.query_start_loc, cu_chunk_seqlens=meta.cu_chunk_seqlens,
            last_chunk_indices=meta.last_chunk_indices, seq_idx=meta.seq_idx, out=y, D=self.D, z=None,
            dt_bias=self.dt_bias, initial_states=cache.ssm_state.clone() if continuing else None, dt_softplus=True,
            dt_limit=(0.0, float("inf")), state_dtype=cache.ssm_state.dtype, final_states_out=cache.ssm_state,
            final_state_indices=meta.slots)
        normed = ops.rms_norm_gated(y.reshape(total, c.intermediate_size), self.norm.weight, None, z=gate,
                                    eps=self.norm.eps, norm_before_gate=False)
        real = F.linear(normed, self.out_proj.weight)
        if not padded:
            return real.view(b, length, hidden)
        out = torch.zeros(b * length, hidden, device=dev, dtype=hidden_states.dtype)
        out.index_copy_(0, meta.rows, real)
        return out.view(b, length, hidden)

    def _store_conv_state(self, cache: MambaCache, old_conv: torch.Tensor | None, xbc: torch.Tensor,
                          meta: types.SimpleNamespace) -> None:
        """cache.conv_state = each row's last d_conv pre-conv columns: its last tokens', then (short rows) the
        columns of ``old_conv`` (the state before this call, when continuing; else zeros)."""
        width = self.config.d_conv
        b = meta.last.shape[0]
        from_tokens = xbc.index_select(0, meta.last_rows.flatten()).view(b, width, -1)
        earlier = (old_conv.transpose(1, 2).gather(1, (meta.last + width).clamp(0, width - 1)[:, :, None].expand(
            -1, -1, old_conv.shape[1])) if old_conv is not None else torch.zeros_like(from_tokens))
        cache.conv_state.copy_(torch.where((meta.last >= 0)[:, :, None], from_tokens, earlier).transpose(1, 2))

    def _prefill_graph(self, hidden_states: torch.Tensor, cache: MambaCache | None,
                       lengths: list[int]) -> tuple[torch.Tensor, MambaCache] | None:
        """A prefill from the zero state as one CUDA graph per (shape, dtype, lengths) (at most _MAX_PREFILL_GRAPHS
        kept): hidden_states copied in, the output and the cache states copied out (into a given empty cache).
        None (the caller runs the prefill eagerly) once a capture has failed: prefill graphs are then off, with a
        warning, so a bench run still times the eager layer."""
        key = (hidden_states.shape, hidden_states.dtype, hidden_states.device, tuple(lengths))
        if key not in self._prefill_graphs:
            if self._prefill_capture_failed:
                return None
            static_in = hidden_states.clone()
            static_cache = MambaCache.zeros(self.config, hidden_states.shape[0], device=hidden_states.device,
                                            dtype=hidden_states.dtype)

            def step():
                return self._prefill(static_in, static_cache, lengths, False)

            try:
                captured = capture_graph(step, step, hidden_states.device)
            except RuntimeError as exc:
                self._prefill_capture_failed = True
                warnings.warn(f"vLLM candidate: prefill graph capture failed, prefills run eagerly: {exc}")
                return None
            self._prefill_graphs[key] = (*captured, static_in, static_cache)
            if len(self._prefill_graphs) > _MAX_PREFILL_GRAPHS:
                self._prefill_graphs.popitem(last=False)
        self._prefill_graphs.move_to_end(key)
        graph, static_out, static_in, static_cache = self._prefill_graphs[key]
        static_in.copy_(hidden_states)
        graph.replay()
        if cache is None:
            return static_out.clone(), MambaCache(static_cache.conv_state.clone(), static_cache.ssm_state.clone())
        cache.conv_state.copy_(static_cache.conv_state)
        cache.ssm_state.copy_(static_cache.ssm_state)
        return static_out.clone(), cache

    def _decode_step(self, hidden_states: torch.Tensor, conv_state: torch.Tensor,
                     ssm_state: torch.Tensor) -> torch.Tensor:
        """One token (b, 1, hidden) -> (b, 1, hidden) through vLLM's decode kernels; states updated in place."""
        c, ops = self.config, _ops()
        b = hidden_states.shape[0]
        gate, xbc, dt = self._split(F.linear(hidden_states[:, 0], self.in_proj.weight))
        # vLLM's state holds the last d_conv - 1 inputs, the cache's the last d_conv: the kernel gets the cache's last
        # d_conv - 1 columns (a view) after the oldest column has taken the one it will keep
        conv_state[:, :, 0] = conv_state[:, :, 1]
        xbc = ops.causal_conv1d_update(xbc, conv_state[:, :, 1:], self.conv1d.weight.squeeze(1), self.conv1d.bias,
                                       "silu", conv_state_indices=torch.arange(b, dtype=torch.int32, device=xbc.device),
                                       null_block_id=None)
        x, bmat, cmat = xbc.split([c.intermediate_size, c.n_groups * c.d_state, c.n_groups * c.d_state], dim=-1)
        heads, p, n = c.num_heads, c.head_dim, c.d_state
        y = torch.empty(b, heads, p, device=x.device, dtype=x.dtype)
        ops.selective_state_update(
            ssm_state, x.reshape(b, heads, p), dt[:, :, None].expand(-1, -1, p),
            (-torch.exp(self.A_log.float()))[:, None, None].expand(-1, p, n), bmat.reshape(b, c.n_groups, n),
            cmat.reshape(b, c.n_groups, n), self.D[:, None].expand(-1, p), self.dt_bias[:, None].expand(-1, p),
            dt_softplus=True, out=y)
        normed = ops.rms_norm_gated(y.reshape(b, c.intermediate_size), self.norm.weight, None, z=gate,
                                    eps=self.norm.eps, norm_before_gate=False)
        return F.linear(normed, self.out_proj.weight)[:, None]

    def _decode(self, hidden_states: torch.Tensor, cache: MambaCache) -> torch.Tensor:
        """The decode step, on CUDA (``use_cuda_graphs``) as one graph per (batch, dtype, cache tensors) replayed
        with the token copied in and the output cloned out (its warm-up on copies of the cache)."""
        if not self._graphs_apply(hidden_states):
            return self._decode_step(hidden_states, cache.conv_state, cache.ssm_state)
        key = (hidden_states.shape, hidden_states.dtype, cache.conv_state.data_ptr(), cache.ssm_state.data_ptr())
        if key not in self._decode_graphs:
            static_in = hidden_states.clone()
            graph, static_out = capture_graph(
                lambda: self._decode_step(static_in, cache.conv_state.clone(), cache.ssm_state.clone()),
                lambda: self._decode_step(static_in, cache.conv_state, cache.ssm_state), hidden_states.device)
            self._decode_graphs[key] = (graph, static_in, static_out)
        graph, static_in, static_out = self._decode_graphs[key]
        static_in.copy_(hidden_states)
        graph.replay()
        return static_out.clone()

    def _apply(self, fn, *args, **kwargs):
        self._decode_graphs.clear()  # (graphs read the parameters at their old addresses)
        self._prefill_graphs.clear()
        return super()._apply(fn, *args, **kwargs)
