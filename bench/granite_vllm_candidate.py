"""Issue 5's VLLM anchor as a Granite candidate: the layer composed from vLLM 0.33's Mamba-2 Triton kernels.

`ssmkit granite verify / bench --candidate bench/granite_vllm_candidate.py` check and time it on the same machine as
the fast layer (the issue's VLLM column was measured on an H200). The kernels come from .anchors/ (`bash
bench/anchor_setup.sh vllm`, never committed; `vllm_kernels.py`), called as vLLM's Mamba-2 mixer calls them
(`mamba_mixer2.py`): a prefill on the batch's real tokens packed one sequence after another (vLLM's engine never
sees pads), in_proj, `causal_conv1d_fn` (varlen, query_start_loc), `mamba_chunk_scan_combined_varlen` (dt softplus,
D, fp32 states written into the cache), `rms_norm_gated` (the gate before the norm), out_proj; a decode step as
in_proj, `causal_conv1d_update`, `selective_state_update` (fp32 state, updated in place), `rms_norm_gated`,
out_proj, captured as one CUDA graph per (batch, cache tensors) as vLLM's CUDA-graph runner replays a decode step
(``use_cuda_graphs``). Same constructor, parameters and checks as ``ReferenceMambaLayer`` (this is its subclass).

Glue that vLLM's engine does elsewhere is done here with torch ops: the real tokens' gather and the output's scatter
(left padding: row b's last lengths[b] positions); the per-step metadata its attention-metadata builder makes (the
SSD's chunk metadata, each sequence cut into chunks from its first token, and the conv kernel's program map), here
built once per lengths and kept (``_metadata``); and the cache's conv_state, which holds the last d_conv pre-conv
columns (``MambaCache``) where vLLM keeps d_conv - 1: the prefill's conv kernel gets its layout's columns and the
cache's are gathered from the tokens, the decode's gets a view of the last d_conv - 1 after one small copy of a
column (a graph node vLLM's layout does not need). A mask that is not left padding takes the reference forward.
Prefills run eagerly (vLLM's prefill path; the issue's "VLLM in a CUDA graph" prefill rows are not reproduced).
Checked on the CPU by bench/granite_vllm_smoke.py (float32, interpreter), on the GPU by `granite verify`.
"""
import functools
import sys
import types
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vllm_kernels import load  # noqa: E402

from ssmkit.granite.cache import MambaCache  # noqa: E402
from ssmkit.granite.reference import ReferenceMambaLayer  # noqa: E402

__all__ = ["CandidateBlock"]

_OPS = []  # the loaded kernels (loaded on first use: importing this file needs no anchor)


def _ops():
    if not _OPS:
        _OPS.append(load())
    return _OPS[0]


_CONV_BLOCK_M = 8  # the token block of vLLM's causal_conv1d_fn launch


@functools.lru_cache(maxsize=16)
def _metadata(lengths: tuple[int, ...], chunk: int, device: torch.device) -> types.SimpleNamespace:
    """What vLLM's engine builds per step for a prefill of packed sequences of these lengths (its attention-metadata
    builder; here once per lengths): the SSD's chunk metadata (cu_chunk_seqlens (nchunks + 1,), seq_idx (nchunks,),
    last_chunk_indices (batch,), int32; each sequence cut into chunks from its first token) and the conv kernel's
    program map (``conv``: nums_dict, batch_ptr, token_chunk_offset_ptr: (sequence, token block) per program)."""
    bounds, seq_idx, last, start = [0], [], [], 0
    for s, n in enumerate(lengths):
        for c0 in range(0, n, chunk):
            bounds.append(start + min(c0 + chunk, n))
            seq_idx.append(s)
        last.append(len(seq_idx) - 1)
        start += n
    blocks = [-(-n // _CONV_BLOCK_M) for n in lengths]
    program_seq = [s for s, k in enumerate(blocks) for _ in range(k)]
    program_block = [j for k in blocks for j in range(k)]
    batch_ptr, offset_ptr = (torch.tensor(v, dtype=torch.int32, device=device) for v in (program_seq, program_block))
    conv = types.SimpleNamespace(
        nums_dict={_CONV_BLOCK_M: {"tot": len(program_seq), "mlist": batch_ptr, "mlist_len": len(program_seq),
                                   "offsetlist": offset_ptr, "batch_ptr": batch_ptr,
                                   "token_chunk_offset_ptr": offset_ptr}},
        batch_ptr=batch_ptr, token_chunk_offset_ptr=offset_ptr)
    cu_chunks, seq_idx_t, last_t = (torch.tensor(v, dtype=torch.int32, device=device) for v in (bounds, seq_idx, last))
    return types.SimpleNamespace(cu_chunk_seqlens=cu_chunks, seq_idx=seq_idx_t, last_chunk_indices=last_t, conv=conv)


class CandidateBlock(ReferenceMambaLayer):
    """The Granite mixer on vLLM 0.33's Mamba-2 kernels (module docstring); ``use_cuda_graphs``: decode graphs."""

    def __init__(self, config, layer_idx: int = 0) -> None:
        super().__init__(config, layer_idx)
        self.use_cuda_graphs = True
        self._graphs: dict[tuple, tuple] = {}

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
        """The real tokens through vLLM's prefill kernels; writes the cache; returns (b, L, hidden), 0 at pads."""
        c, ops = self.config, _ops()
        b, length, hidden = hidden_states.shape
        dev = hidden_states.device
        rows = torch.cat([torch.arange(r * length + length - n, (r + 1) * length, device=dev)
                          for r, n in enumerate(lengths)])
        zxbcdt = F.linear(hidden_states.reshape(b * length, hidden).index_select(0, rows), self.in_proj.weight)
        gate, xbc, dt = self._split(zxbcdt)
        total = zxbcdt.shape[0]
        starts = torch.tensor([0] + lengths, device=dev).cumsum(0)
        query_start_loc = starts.to(torch.int32)
        slots = torch.arange(b, dtype=torch.int32, device=dev)
        meta = _metadata(tuple(lengths), c.chunk_size, dev)
        old_conv = cache.conv_state.clone()  # (the cache's last d_conv columns before this call)
        conv_states = old_conv[:, :, 1:].contiguous()  # vLLM's layout: the last d_conv - 1 columns
        conv = ops.causal_conv1d_fn(
            xbc.transpose(0, 1), self.conv1d.weight.squeeze(1), self.conv1d.bias, conv_states=conv_states,
            query_start_loc=query_start_loc, cache_indices=slots,
            has_initial_state=torch.full((b,), continuing, dtype=torch.bool, device=dev), activation="silu",
            null_block_id=None, metadata=meta.conv).transpose(0, 1)
        self._store_conv_state(cache, old_conv, xbc, starts, lengths, continuing)
        x, bmat, cmat = conv.split([c.intermediate_size, c.n_groups * c.d_state, c.n_groups * c.d_state], dim=-1)
        y = torch.empty(total, c.num_heads, c.head_dim, device=dev, dtype=hidden_states.dtype)
        ops.mamba_chunk_scan_combined_varlen(
            x.reshape(total, c.num_heads, c.head_dim), dt, -torch.exp(self.A_log.float()),
            bmat.reshape(total, c.n_groups, c.d_state), cmat.reshape(total, c.n_groups, c.d_state), c.chunk_size,
            cu_seqlens=query_start_loc, cu_chunk_seqlens=meta.cu_chunk_seqlens,
            last_chunk_indices=meta.last_chunk_indices, seq_idx=meta.seq_idx, out=y, D=self.D, z=None,
            dt_bias=self.dt_bias, initial_states=cache.ssm_state.clone() if continuing else None, dt_softplus=True,
            dt_limit=(0.0, float("inf")), state_dtype=cache.ssm_state.dtype, final_states_out=cache.ssm_state,
            final_state_indices=slots)
        normed = ops.rms_norm_gated(y.reshape(total, c.intermediate_size), self.norm.weight, None, z=gate,
                                    eps=self.norm.eps, norm_before_gate=False)
        out = torch.zeros(b * length, hidden, device=dev, dtype=hidden_states.dtype)
        out.index_copy_(0, rows, F.linear(normed, self.out_proj.weight))
        return out.view(b, length, hidden)

    def _store_conv_state(self, cache: MambaCache, old_conv: torch.Tensor, xbc: torch.Tensor, starts: torch.Tensor,
                          lengths: list[int], continuing: bool) -> None:
        """cache.conv_state = each row's last d_conv pre-conv columns: its last tokens', then (short rows) the old
        state's last columns (continuing) or zeros."""
        width = self.config.d_conv
        b = len(lengths)
        pos = torch.tensor(lengths, device=xbc.device)[:, None] - width + torch.arange(width, device=xbc.device)
        from_tokens = xbc.index_select(0, (starts[:-1, None] + pos.clamp_min(0)).flatten()).view(b, width, -1)
        earlier = old_conv.transpose(1, 2).gather(1, (pos + width).clamp(0, width - 1)[:, :, None].expand(
            -1, -1, old_conv.shape[1])) if continuing else torch.zeros_like(from_tokens)
        cache.conv_state.copy_(torch.where((pos >= 0)[:, :, None], from_tokens, earlier).transpose(1, 2))

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
        with the token copied in and the output cloned out."""
        if not (self.use_cuda_graphs and hidden_states.is_cuda and not torch.cuda.is_current_stream_capturing()):
            return self._decode_step(hidden_states, cache.conv_state, cache.ssm_state)
        key = (hidden_states.shape, hidden_states.dtype, cache.conv_state.data_ptr(), cache.ssm_state.data_ptr())
        if key not in self._graphs:
            static_in = hidden_states.clone()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # (warm-up on copies: Triton compiles, the cache is left as it is)
                self._decode_step(static_in, cache.conv_state.clone(), cache.ssm_state.clone())
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_out = self._decode_step(static_in, cache.conv_state, cache.ssm_state)
            self._graphs[key] = (graph, static_in, static_out)
        graph, static_in, static_out = self._graphs[key]
        static_in.copy_(hidden_states)
        graph.replay()
        return static_out.clone()

    def _apply(self, fn, *args, **kwargs):
        self._graphs.clear()  # (graphs read the parameters at their old addresses)
        return super()._apply(fn, *args, **kwargs)
