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
(left padding: row b's last lengths[b] positions; none without pads); the per-step metadata its attention-metadata
builder makes (the SSD's chunk metadata, each sequence cut into chunks from its first token, and the conv kernel's
program map), here built once per lengths and kept (``_metadata``); and the cache's conv_state, which holds the last
d_conv pre-conv columns (``MambaCache``) where vLLM keeps d_conv - 1: the conv kernels read and write a view of the
last d_conv - 1 columns and the first column is filled beside them (a small gather in a prefill, a column copy in a
decode step: nodes vLLM's layout does not need). As in vLLM: A = -exp(A_log) kept in fp32 (built once, dropped when
parameters load or move), the SSD kernels tuned once on a 256-token prefill (``_warm_up``). As in issue 5's VLLM
layer: the SSM state in fp32 (vLLM's ``--mamba-ssm-cache-dtype float32``; its default "auto" keeps the model dtype),
and the gated norm as vLLM's ``rms_norm_gated`` kernel (its eager / custom-op path; under torch.compile's defaults
vLLM compiles the norm's torch form instead). Prefill graphs hold the kernels between the projections (in_proj writes
their static input, out_proj reads their static output, the cache states are copied out), as the fast layer's
"kernels" graphs do. A mask that is not left padding takes the reference forward; continuations run eagerly.
Checked on the CPU by bench/granite_vllm_smoke.py (float32, interpreter, eager and through the graph paths with a
stand-in capture), on the GPU by `granite verify`.
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
from ssmkit.granite.layer import _can_capture  # noqa: E402  (CUDA and the caller not capturing, as the fast layer)
from ssmkit.granite.reference import ReferenceMambaLayer  # noqa: E402
from ssmkit.kernels.common.mapped_io import capture_graph  # noqa: E402

__all__ = ["CandidateBlock"]

_OPS = []  # the loaded kernels (loaded on first use: importing this file needs no anchor)


def _ops():
    if not _OPS:
        _OPS.append(load())
    return _OPS[0]


_CONV_BLOCK_M = 8  # the token block of vLLM's causal_conv1d_fn launch
_MAX_PREFILL_GRAPHS = 4  # (a graph keeps its static buffers and memory pool: ~1 GB at L = 16384)


@functools.lru_cache(maxsize=8)
def _slots(batch: int, device: torch.device) -> torch.Tensor:
    """(batch,) int32 0, 1, ...: the state slot of each row (the cache's rows; slot 0 is a real row here, so the
    kernels get no null block id)."""
    return torch.arange(batch, dtype=torch.int32, device=device)


@functools.lru_cache(maxsize=16)
def _metadata(lengths: tuple[int, ...], width: int, chunk: int, d_conv: int,
              device: torch.device) -> types.SimpleNamespace:
    """Index tensors of a prefill of a (b, width) left-padded batch with these real-token counts, built once per key:
    what vLLM's engine builds per step for packed sequences (its attention-metadata builder): query_start_loc
    (b + 1,), the SSD's chunk metadata (cu_chunk_seqlens (nchunks + 1,), seq_idx (nchunks,), last_chunk_indices
    (b,), int32; each sequence cut into chunks from its first token), the conv kernel's program map (``conv``:
    nums_dict, batch_ptr, token_chunk_offset_ptr: (sequence, token block) per program), slots (b,); and the glue's:
    ``rows`` (the real tokens' rows of the (b * width) flattened batch), ``last`` (b, d_conv) each row's last d_conv
    positions relative to its first real token (negative: before it), ``last_rows`` their packed rows (clamped),
    ``fresh`` / ``continuing`` the conv kernel's has_initial_state for each row.
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
        last_chunk_indices=ints(last_chunk), conv=conv, slots=_slots(len(lengths), device),
        fresh=torch.zeros(len(lengths), dtype=torch.bool, device=device),
        continuing=torch.ones(len(lengths), dtype=torch.bool, device=device),
        rows=ints([r * width + p for r, n in enumerate(lengths) for p in range(width - n, width)], torch.int64),
        last=ints(last, torch.int64),
        last_rows=ints([[starts[r] + max(p, 0) for p in pos] for r, pos in enumerate(last)], torch.int64))


class CandidateBlock(ReferenceMambaLayer):
    """The Granite mixer on vLLM 0.33's Mamba-2 kernels (module docstring); ``use_cuda_graphs``: CUDA graphs of the
    decode step and of the kernels between the projections of a prefill from the zero state."""

    def __init__(self, config, layer_idx: int = 0) -> None:
        super().__init__(config, layer_idx)
        self.use_cuda_graphs = True
        self._decode_graphs: dict[tuple, tuple] = {}
        self._prefill_graphs: OrderedDict[tuple, tuple] = OrderedDict()
        self._capture_failed: set[str] = set()  # "prefill" / "decode": graphs of that path are off (a warning said)
        self._tuned: set[torch.device] = set()  # devices where vLLM's SSD warm-up has run (``_warm_up``)
        self._a_fp32: torch.Tensor | None = None  # A = -exp(A_log) in fp32, as vLLM's mixer keeps it (``_a``)
        self.register_load_state_dict_post_hook(lambda module, keys: module._drop_captured())

    def _drop_captured(self) -> None:
        """Graphs and derived tensors read the parameters as they were: after loading or moving, build anew."""
        self._decode_graphs.clear()
        self._prefill_graphs.clear()
        self._a_fp32 = None

    def _apply(self, fn, *args, **kwargs):
        self._drop_captured()
        return super()._apply(fn, *args, **kwargs)

    def _a(self) -> torch.Tensor:
        if self._a_fp32 is None:
            self._a_fp32 = -torch.exp(self.A_log.float())
        return self._a_fp32

    def _graphs_apply(self, hidden_states: torch.Tensor) -> bool:
        return self.use_cuda_graphs and _can_capture(hidden_states)

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
            self._warm_up(hidden_states)
            lengths = tuple(facts.lengths) if mask is not None else (length,) * b
            continuing = cache is not None and cache.has_previous_state
            out, cache = self._prefill(hidden_states, cache, lengths, continuing)
        cache.seqlen_offset = cache.seqlen_offset + length if continuing else length
        cache.has_previous_state = True
        return out, cache

    def _warm_up(self, hidden_states: torch.Tensor) -> None:
        """vLLM's mixer tunes its autotuned SSD kernels once, on a 256-token prefill of one sequence, before serving;
        so does this layer on its first prefill on a CUDA device (scratch tensors; the tuned configs then serve
        every length, as in vLLM: the tuning keys hold no length)."""
        dev = hidden_states.device
        if dev.type != "cuda" or dev in self._tuned:
            return
        self._tuned.add(dev)
        c = self.config
        scratch = MambaCache.zeros(c, 1, device=dev, dtype=hidden_states.dtype)
        zxbcdt = torch.randn(256, c.in_proj_dim, device=dev, dtype=hidden_states.dtype)
        self._prefill_kernels(zxbcdt, scratch, _metadata((256,), 256, c.chunk_size, c.d_conv, dev), False)

    def _split(self, zxbcdt: torch.Tensor):
        c = self.config
        return zxbcdt.split([c.intermediate_size, c.conv_dim, c.num_heads], dim=-1)

    # ----------------------------------------------------------------------------------------- prefill
    def _prefill(self, hidden_states: torch.Tensor, cache: MambaCache | None, lengths: tuple[int, ...],
                 continuing: bool) -> tuple[torch.Tensor, MambaCache]:
        """in_proj on the real tokens, the kernels between the projections (a CUDA graph per (shape, lengths) for a
        call from the zero state, ``_prefill_graph``; else eagerly into the cache), out_proj scattered back (0 at
        pads). Returns (output (b, L, hidden), cache)."""
        c = self.config
        b, length, hidden = hidden_states.shape
        dev = hidden_states.device
        meta = _metadata(lengths, length, c.chunk_size, c.d_conv, dev)
        padded = sum(lengths) < b * length  # (without pads the tokens are already packed: no gather, no scatter)
        tokens = hidden_states.reshape(b * length, hidden)
        tokens = tokens.index_select(0, meta.rows) if padded else tokens
        entry = None
        if not continuing and self._graphs_apply(hidden_states):
            entry = self._prefill_graph(meta, lengths, hidden_states)
        if entry is None:
            if cache is None:
                cache = MambaCache.zeros(c, b, device=dev, dtype=hidden_states.dtype)
            normed = self._prefill_kernels(F.linear(tokens, self.in_proj.weight), cache, meta, continuing)
        else:
            graph, normed, static_in, static_cache = entry
            torch.mm(tokens, self.in_proj.weight.t(), out=static_in)
            graph.replay()
            if cache is None:
                cache = MambaCache(static_cache.conv_state.clone(), static_cache.ssm_state.clone())
            else:
                cache.conv_state.copy_(static_cache.conv_state)
                cache.ssm_state.copy_(static_cache.ssm_state)
        real = F.linear(normed, self.out_proj.weight)
        if not padded:
            return real.view(b, length, hidden), cache
        out = torch.zeros(b * length, hidden, device=dev, dtype=hidden_states.dtype)
        out.index_copy_(0, meta.rows, real)
        return out.view(b, length, hidden), cache

    def _prefill_kernels(self, zxbcdt: torch.Tensor, cache: MambaCache, meta: types.SimpleNamespace,
                         continuing: bool) -> torch.Tensor:
        """vLLM's prefill kernels between the projections: in_proj output (T, in_proj_dim) of packed sequences ->
        normed (T, intermediate); writes the cache's states. Nothing read from the host (``_metadata``), so a call
        from the zero state can be captured."""
        c, ops = self.config, _ops()
        gate, xbc, dt = self._split(zxbcdt)
        total = zxbcdt.shape[0]
        # the cache keeps the last d_conv pre-conv columns, vLLM's state the last d_conv - 1: the kernel reads and
        # writes the cache's last d_conv - 1 (a view); the first column (the d_conv-th last input) comes from the
        # tokens, or for a short row from the state before the call (continuing) or zeros
        first = self._first_conv_column(cache, xbc, meta, continuing)
        conv = ops.causal_conv1d_fn(
            xbc.transpose(0, 1), self.conv1d.weight.squeeze(1), self.conv1d.bias,
            conv_states=cache.conv_state[:, :, 1:], query_start_loc=meta.query_start_loc, cache_indices=meta.slots,
            has_initial_state=meta.continuing if continuing else meta.fresh, activation="silu", null_block_id=None,
            metadata=meta.conv).transpose(0, 1)
        cache.conv_state[:, :, 0] = first
        x, bmat, cmat = conv.split([c.intermediate_size, c.n_groups * c.d_state, c.n_groups * c.d_state], dim=-1)
        y = torch.empty(total, c.num_heads, c.head_dim, device=zxbcdt.device, dtype=zxbcdt.dtype)
        ops.mamba_chunk_scan_combined_varlen(
            x.reshape(total, c.num_heads, c.head_dim), dt, self._a(),
            bmat.reshape(total, c.n_groups, c.d_state), cmat.reshape(total, c.n_groups, c.d_state), c.chunk_size,
            cu_seqlens=meta.query_start_loc, cu_chunk_seqlens=meta.cu_chunk_seqlens,
            last_chunk_indices=meta.last_chunk_indices, seq_idx=meta.seq_idx, out=y, D=self.D, z=None,
            dt_bias=self.dt_bias, initial_states=cache.ssm_state.clone() if continuing else None, dt_softplus=True,
            dt_limit=(0.0, float("inf")), state_dtype=cache.ssm_state.dtype, final_states_out=cache.ssm_state,
            final_state_indices=meta.slots)
        return ops.rms_norm_gated(y.reshape(total, c.intermediate_size), self.norm.weight, None, z=gate,
                                  eps=self.norm.eps, norm_before_gate=False)

    def _first_conv_column(self, cache: MambaCache, xbc: torch.Tensor, meta: types.SimpleNamespace,
                           continuing: bool) -> torch.Tensor:
        """(b, conv_dim): each row's d_conv-th last pre-conv input after this call (read before the call's writes)."""
        from_tokens = xbc.index_select(0, meta.last_rows[:, 0])
        pos = meta.last[:, :1]  # (b, 1): its position from the row's first token (negative: before it)
        width = self.config.d_conv
        column = (pos + width).clamp(0, width - 1)[:, None, :].expand(-1, cache.conv_state.shape[1], 1)
        earlier = cache.conv_state.gather(2, column)[:, :, 0] if continuing else torch.zeros_like(from_tokens)
        return torch.where(pos >= 0, from_tokens, earlier)

    def _prefill_graph(self, meta: types.SimpleNamespace, lengths: tuple[int, ...],
                       hidden_states: torch.Tensor) -> tuple | None:
        """The kernels between the projections of a prefill from the zero state, captured once per (shape, dtype,
        lengths) (at most _MAX_PREFILL_GRAPHS kept; like the fast layer's "kernels" prefill graphs): (graph, static
        normed output, static in_proj output to fill, static cache). None (run eagerly) once a capture has failed:
        prefill graphs are then off, with a warning, so a bench still times the eager layer."""
        key = (hidden_states.shape, hidden_states.dtype, hidden_states.device, lengths)
        if key not in self._prefill_graphs:
            if "prefill" in self._capture_failed:
                return None
            c = self.config
            static_in = torch.zeros(sum(lengths), c.in_proj_dim, device=hidden_states.device,
                                    dtype=hidden_states.dtype)
            static_cache = MambaCache.zeros(c, len(lengths), device=hidden_states.device, dtype=hidden_states.dtype)

            def step():
                return self._prefill_kernels(static_in, static_cache, meta, False)

            try:
                graph, normed = capture_graph(step, step, hidden_states.device)
            except RuntimeError as exc:
                self._capture_failed.add("prefill")
                warnings.warn(f"vLLM candidate: prefill graph capture failed, prefills run eagerly: {exc}")
                return None
            self._prefill_graphs[key] = (graph, normed, static_in, static_cache, meta)  # (meta: its tensors live on)
            if len(self._prefill_graphs) > _MAX_PREFILL_GRAPHS:
                self._prefill_graphs.popitem(last=False)
        self._prefill_graphs.move_to_end(key)
        return self._prefill_graphs[key][:4]

    # ----------------------------------------------------------------------------------------- decode
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
                                       "silu", conv_state_indices=_slots(b, xbc.device), null_block_id=None)
        x, bmat, cmat = xbc.split([c.intermediate_size, c.n_groups * c.d_state, c.n_groups * c.d_state], dim=-1)
        heads, p, n = c.num_heads, c.head_dim, c.d_state
        y = torch.empty(b, heads, p, device=x.device, dtype=x.dtype)
        ops.selective_state_update(
            ssm_state, x.reshape(b, heads, p), dt[:, :, None].expand(-1, -1, p),
            self._a()[:, None, None].expand(-1, p, n), bmat.reshape(b, c.n_groups, n),
            cmat.reshape(b, c.n_groups, n), self.D[:, None].expand(-1, p), self.dt_bias[:, None].expand(-1, p),
            dt_softplus=True, out=y)
        normed = ops.rms_norm_gated(y.reshape(b, c.intermediate_size), self.norm.weight, None, z=gate,
                                    eps=self.norm.eps, norm_before_gate=False)
        return F.linear(normed, self.out_proj.weight)[:, None]

    def _decode(self, hidden_states: torch.Tensor, cache: MambaCache) -> torch.Tensor:
        """The decode step, on CUDA (``use_cuda_graphs``) as one graph per (batch, dtype, cache tensors) replayed
        with the token copied in and the output cloned out (its warm-up on copies of the cache); eagerly once a
        capture has failed (with a warning)."""
        if not self._graphs_apply(hidden_states) or "decode" in self._capture_failed:
            return self._decode_step(hidden_states, cache.conv_state, cache.ssm_state)
        key = (hidden_states.shape, hidden_states.dtype, cache.conv_state.data_ptr(), cache.ssm_state.data_ptr())
        if key not in self._decode_graphs:
            static_in = hidden_states.clone()
            try:
                graph, static_out = capture_graph(
                    lambda: self._decode_step(static_in, cache.conv_state.clone(), cache.ssm_state.clone()),
                    lambda: self._decode_step(static_in, cache.conv_state, cache.ssm_state), hidden_states.device)
            except RuntimeError as exc:
                self._capture_failed.add("decode")
                warnings.warn(f"vLLM candidate: decode graph capture failed, decode runs eagerly: {exc}")
                return self._decode_step(hidden_states, cache.conv_state, cache.ssm_state)
            # (the slot indices the graph reads, kept with it: _slots' cache could drop them)
            self._decode_graphs[key] = (graph, static_in, static_out, _slots(hidden_states.shape[0],
                                                                             hidden_states.device))
        graph, static_in, static_out, _ = self._decode_graphs[key]
        static_in.copy_(hidden_states)
        graph.replay()
        return static_out.clone()
