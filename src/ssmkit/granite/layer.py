"""FastMambaLayer: ReferenceMambaLayer's contract on Triton kernels (single-token decode fused, CUDA-graphed).

Same constructor, parameters, forward signature, input validation (the reference's ``check_forward_args``) and
cache semantics as ``ReferenceMambaLayer`` (spec §2.1, §3). Inference only: the kernels carry no autograd, so the
forward runs under ``torch.no_grad()``.

Paths:
- Decode (cache with previous state, L == 1): in_proj -> ``granite_decode_step`` (two Triton kernels: conv + dt +
  state update + gate, then RMSNorm + conv-state roll; from 16 rows three: conv + roll, dt + state update + gate,
  RMSNorm, ``decode_conv_apart``) -> out_proj (projections: ``decode_projections``). On CUDA the whole step
  is one CUDA graph per (batch, cache tensors' addresses and strides, dtype, device), captured on first use.
  (Session 1, bench/results/granite_decode_v2.json: a graph of the whole step beats a graph of the two kernels
  alone with eager cuBLAS calls around it, 31 vs 57 us at B=1: eager cuBLAS launches cost more host time than
  the copy and the clone.) ``decode_io`` "mapped" (default): the graph's first nodes copy the token in from,
  and its last node the output out to, addresses posted before each replay in a pinned host-mapped table
  (``MappedIO``), so a call is a few stores to host memory and the replay (the output is allocated after the
  previous call's replay); at B <= 2 the table fetch copies the token itself and the out_proj GEMV writes the
  posted output (5 graph nodes; session 8: 36.6 -> 32.4 us per call at B = 1, bench/granite/NOTES.md); "copy": a
  call copies the token into the graph's static input, replays, and returns a clone of the static output. Either way
  nothing returned aliases the graph's buffers. (H200, interleaved A/B in one process: mapped 51.6 / 59.7 /
  128.0 us per call at B=1/8/64 against copy 65.9 / 60.3 / 126.5 on a slow host,
  bench/results/session3/host_timeline_s3f.json; `granite bench` one after the other in one call: 50.2 / 52.9 /
  113.4 against 69.7 / 71.6 / 117.8, results/session3/final/bench_*.json.) Elsewhere (CPU under
  TRITON_INTERPRET=1, while the caller is capturing its own graph, or with ``use_cuda_graphs`` False) the same
  step runs eagerly.
- Prefill and multi-token continuation: in_proj (cuBLAS, on the input after padding mask #1) ->
  ``causal_conv1d_silu_prefill`` (reads the xBC slice of the in_proj output in place, writes conv_state, continues
  from it) -> ``ssd_chunked_prefill`` (writes ssm_state, continues from it) -> ``gated_rmsnorm`` -> out_proj.
  Two switches, on by default since the H200 run of bench/granite_layer_bench.py --variants all
  (bench/results/granite_layer_phase2.json, bench/granite/NOTES.md "Phase 2": every variant passed the calibrated
  checks; "kernels" graphs + packing + cb_spread was fastest or within noise of it on all three prefill workloads;
  session 3 made "mapped" the default for packed batches, below):
  ``prefill_graphs``: on CUDA a prefill from the zero state (no previous state) runs as one CUDA graph per
  (batch, L, mask present and dtype, packed lengths, dtype, device, switches), at most 4 kept per layer. "whole":
  the whole forward is captured; a call copies hidden_states and the mask into static inputs, replays, and returns
  clones of the static output and cache tensors (a given empty cache gets them copied in place). "kernels": only
  the 5 launches between the GEMMs are captured; in_proj writes eagerly into the graph's static input and out_proj
  reads its static output eagerly into a new tensor (no (b, L, hidden) copy in or clone out; two eager cuBLAS
  launches instead). The kernel wrappers decide nothing from device data (fully padded chunks are skipped on the
  device), so a replay with another mask of the same shape is exact. "mapped" (default since session 3): for a
  packed left-padded batch (below) the whole forward is one graph between ``MappedIO``'s gather of the real rows
  from the caller's hidden_states and its writes into a new output and the cache tensors (a given empty cache's
  own tensors, new ones otherwise), all at addresses posted before the replay: a call is three torch.empty, the
  post and the replay (no gather, GEMM, clone or unpack launches from the host); other batches take "kernels".
  (H200, interleaved A/B in one process: 1351 vs 1399 us per B=8 left-padded call against "kernels";
  bench/results/session3/host_timeline_s3f.json. Session 12 measured the same graph for unmasked batches, with
  slot copies in and out: 407.4 vs 414.1 us per B=1 L=4096 call, 1246.2 vs 1202.8 at L=16384, +100 MiB peak
  memory at 4096; not kept, bench/granite/NOTES.md "Session 12".)
  ``prefill_address_graphs`` (session 47; default True since session 49): an unmasked prefill without a cache
  whose contiguous hidden_states sit at an address that an earlier such call of the same shape used replays a graph
  of its own captured on that address ("addressed"): the "kernels" graph with in_proj inside it, reading the
  caller's memory at replay time (no copy; out_proj eager after it as in "kernels"), so the GPU no longer idles
  through cuBLAS's host launch path before its first kernel. One graph per (address, shape, switches); the caller's
  tensor is not kept alive, so a new tensor at a used address is read there. Captured on an address's second
  sighting (a loop whose inputs never reuse an address captures nothing more), in an LRU of its own
  (``_MAX_ADDRESSED_GRAPHS``) where a new graph replaces the least recently replayed one only once that one has sat
  idle for ``_ADDRESSED_IDLE_REPLAYS`` prefill replays and the new address was seen within them, so addresses
  that recur less often do not capture in place of one another (calls with an empty cache given, or an all-ones
  mask, take these graphs too). A shape's "kernels" and "addressed" graphs share one memory pool
  (``FastMambaLayer._prefill_pool``): an addressed graph beside another of its shape adds its static output, not
  a pool of temporaries (~600 MiB at L = 16384 on a pool of its own, bench/results/session49/). (H100, same process:
  session 47's prototype beside the layer, -27.6 / -28.0 us per B=1 call at L = 4096 / 16384, the same bits;
  bench/granite/NOTES.md "Session 47" and "Session 49".)
  ``speculate_packed_prefill`` (default True): a packed graph is chosen by the mask's lengths, which reach the host
  through a device-to-host copy, and the GPU idled from that copy until the replay began. When the last two calls
  of a shape (no cache given) ran the same "mapped" graph, a call replays that graph into new tensors at once and
  reads the mask's facts beside it (a side stream): the same checks and errors, and when the facts lead to that
  graph (the same key) the replay's results are the call's, bit for bit; otherwise they are dropped and the call
  runs as without the guess (``FastMambaLayer._guessed_packed_prefill``). So it pays where consecutive calls share
  their padding (as the bench's calls do); a wrong guess costs one wasted replay.
  ``pack_padded_gemms``: for a left-padded batch (mask present, a real token) and projections without bias, the
  projections run on real tokens only; the output is 0 at pads. The lengths come to the host with one small D2H
  copy per call (the argument check's; ``_mask_facts`` reads the lengths, the 0/1 check and the left padding
  with one Triton launch, ``mask_row_facts``: 38 vs 119 us of host time for the eager ``mask_facts`` on the
  H200 machine, 1.39 vs 1.55 ms per B=8 left-padded call, bench/results/session3/host_timeline_s3b.json).
  "packed" (default; True means the same): the real tokens gathered (index from the mask on the
  device, kept with the graph), one in_proj GEMM into a packed (T, in_proj_dim) buffer, the kernels read it
  through the packed varlen layout (conv1d.py: row b's position l at packed row base[b] + l, reads before its
  first real token give the reference's zeros) and write xBC, y and normed packed (no pad position read or
  written), one out_proj GEMM, unpacked into the output (``unpack_varlen_rows``, pads 0). "rows" (Phase 2's
  form): one cuBLAS call per row on its last len_b positions in place in the padded layout, the pads the kernels
  read zeroed as the reference has them (raw xBC at the d_conv positions before the first real token, dt_raw at
  every pad). (A third form, one GEMM on the gathered tokens scattered into the padded layout for the unchanged
  kernels, measured 2.25 vs 1.79 ms on the B=8 varlen bench and was removed: bench/granite/NOTES.md "Session 2".)
- Anything the kernels do not handle: the reference forward, with a warning the first time each reason occurs on
  a layer. That is non-CUDA tensors without TRITON_INTERPRET=1; non-power-of-two head_dim, d_state or d_conv;
  for decode a model dtype other than bf16 / fp32; for prefill a dtype other than bf16, n_groups != 1, a
  time_step_limit other than (0, inf), or (on the GPU, tl.dot tiles) chunk_size, head_dim or d_state below 16.
"""
from __future__ import annotations

import contextlib
import warnings
from collections import OrderedDict
from typing import NamedTuple

import torch
import torch.nn.functional as F
import triton

from ssmkit.granite.cache import MambaCache
from ssmkit.granite.config import GraniteMambaConfig
from ssmkit.granite.reference import MaskFacts, ReferenceMambaLayer, apply_padding_mask, check_binary, recurrent_mask
from ssmkit.kernels.dispatch import kernels_apply
from ssmkit.kernels.granite.conv1d import causal_conv1d_silu_prefill, packed_layout_rows, unpack_varlen_rows
from ssmkit.kernels.granite.gated_norm import gated_rmsnorm
from ssmkit.kernels.common.mapped_io import MappedIO, ReplayStream, capture_graph, postable
from ssmkit.kernels.granite.mask_facts import MASK_DTYPES, PendingMaskFacts, mask_row_facts
from ssmkit.kernels.granite.checks import is_pow2
from ssmkit.kernels.granite.decode_linear import GEMV_MAX_ROWS, granite_decode_linear
from ssmkit.kernels.granite.ssd_decode import granite_decode_step
from ssmkit.kernels.granite.ssd_prefill import ssd_chunked_prefill

__all__ = ["FastMambaLayer"]

_DECODE_DTYPES = (torch.bfloat16, torch.float32)
# Decode graphs kept per layer (one per batch size and cache object in use); the oldest is dropped beyond this.
_MAX_DECODE_GRAPHS = 16
# Prefill graphs kept per layer (one per input shape; ~45 KB of graph memory per padded token at the real
# config, so ~1.5 GB for B=8 x 4096); the least recently used is dropped beyond this.
_MAX_PREFILL_GRAPHS = 4
# FastMambaLayer.prefill_graphs: off, the whole forward in the graph, the kernels between the GEMMs only, or
# ("mapped") the whole forward with MappedIO for packed left-padded batches ("kernels" for the others).
_PREFILL_GRAPH_MODES = (False, "whole", "kernels", "mapped")
# The prefill graph modes whose graphs of one input shape share a memory pool (FastMambaLayer._prefill_pool).
_POOLED_GRAPH_MODES = ("kernels", "addressed")
# FastMambaLayer.prefill_address_graphs: the (address, shape) keys of unmasked prefill inputs seen, at most this many
# remembered, the least recently seen forgotten first (a key seen before may capture its "addressed" graph:
# FastMambaLayer._takes_addressed_graph).
_MAX_SEEN_ADDRESSES = 16
# FastMambaLayer.prefill_address_graphs: "addressed" graphs kept per layer, apart from the _MAX_PREFILL_GRAPHS LRU
# (room for two shapes of 3 rotating inputs; each holds its static output, on a pool shared with its shape's other
# graphs: FastMambaLayer._prefill_pool). When all are held, a new one replaces the least recently replayed only if
# that one has not replayed in the layer's last _ADDRESSED_IDLE_REPLAYS prefill replays and the new address was
# seen within them: a capture replaces a graph used less recently than the new address, so addresses that each
# recur less often than that never capture in place of one another.
_MAX_ADDRESSED_GRAPHS = 6
_ADDRESSED_IDLE_REPLAYS = 32
# FastMambaLayer.pack_padded_gemms -> _Packing mode (None: projections over every position; True = "packed").
_PACK_MODES = {False: None, True: "packed", "rows": "rows", "packed": "packed"}
# FastMambaLayer.decode_io: how a decode graph gets its token and returns its output (_DecodeGraph).
_DECODE_IO_MODES = ("mapped", "copy")
_DECODE_PROJECTIONS = ("auto", "cublas", "triton")
_AUTO_GEMV_ROWS = 2  # "auto": out_proj through the GEMV up to this batch (see FastMambaLayer)
# "auto" in_proj (every batch) and out_proj above that: the split-K kernel, (block_n, split, block_k) for batches up
# to the first number (H200 sweep, each projection alone in a graph, bench/results/session9/run2/; FastMambaLayer)
_AUTO_SPLITK = {"in_proj": ((2, (64, 1, 128)), (8, (64, 1, 256)), (64, (64, 1, 256))),
                "out_proj": ((8, (32, 8, 128)), (64, (32, 2, 256)))}
_SPLITK_MIN_BLOCK_N = 16  # the arrival counters a graph keeps cover cdiv(N, 16) column blocks


class _DecodeGraph:
    """A decode step captured on one cache: input (b, 1, hidden) -> a new output (b, 1, hidden).

    ``io`` None ("copy"): the token is copied into ``static_in`` before the replay and ``static_out`` is cloned
    after it. ``io`` a ``MappedIO`` ("mapped"): the graph reads the token from, and writes a new output to,
    addresses posted in pinned host memory before the replay (no copy_ or clone launch): its first node fetches the
    table (and, for small batches, copies the token itself, unless in_proj reads it from its posted address), and
    either a last copy-out node or the out_proj kernel itself writes the output
    (``FastMambaLayer._posted_projections``)."""

    def __init__(self, graph: torch.cuda.CUDAGraph, static_in: torch.Tensor, static_out: torch.Tensor,
                 io: MappedIO | None, counters: tuple[torch.Tensor | None, ...] = ()) -> None:
        self.graph = graph
        self.counters = counters  # the split-K arrival counters the replays use (allocated before the capture)
        self.static_in = static_in
        self.static_out = static_out
        self.io = io
        self._spare = None  # "mapped": the next call's output, allocated after the last replay, on that stream
        self._stream = ReplayStream(static_in.device)

    def run(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """Replay on ``hidden_states`` and return a new output tensor (nothing returned aliases the graph).
        "mapped": the output was allocated after the previous call's replay, while the GPU ran it (on the same
        stream; a call on another stream allocates its own), so no allocation precedes this call's replay. A replay
        on another stream than the previous one first waits for that stream: the table fetch acknowledges as soon
        as it has read the table, while the rest of that replay still reads the stash and the static buffers."""
        if self.io is None:
            self.static_in.copy_(hidden_states)
            self.graph.replay()
            return self.static_out.clone()
        out, self._spare = self._spare, None
        if not self._stream.same():
            out = None  # (the spare output belongs to the previous stream)
        if out is not None and out.is_inference() != torch.is_inference_mode_enabled():
            out = None  # (allocated under the previous call's inference mode)
        if out is None:
            out = torch.empty_like(self.static_out)  # (contiguous: static_out is)
        src = postable(hidden_states)  # (in_proj reads it with 16-byte accesses; a copy lives until the replay)
        self.io.replay(self.graph, src, (out,))
        self._spare = torch.empty_like(self.static_out)
        return out


def _release_graphs(graphs) -> None:
    """Before dropping captured graphs (their memory pool or their part of a shared one, static buffers and counters
    go back to the allocator): wait until none of their replays still runs on the GPU. An acknowledgement does not
    say so (the table fetch acknowledges once it has read the table), and a replay on another stream is not ordered
    with later allocations on this one."""
    for device in {g.static_out.device for g in graphs}:
        if device.type == "cuda":
            torch.cuda.synchronize(device)


def _tensor_layout(t: torch.Tensor) -> tuple:
    """What a captured graph baked in about a tensor: address, shape, strides, dtype."""
    return t.data_ptr(), t.shape, t.stride(), t.dtype


class _Binding:
    """What a fast path's binding checks of a call (``FastMambaLayer._bound_call``): the input's shape, dtype and
    CUDA device index as the validated call that made the binding had them, the projection weight's dtype and device
    (the reference's check compares the input's with them: casting or moving ``in_proj`` alone, or swapping its
    ``.data``, must reach that check), the layer's switches that choose the graph, and that the caller is not
    capturing a graph."""

    __slots__ = ("shape", "dtype", "device_index", "switches")

    def __init__(self, hidden_states: torch.Tensor, switches: tuple) -> None:
        self.shape, self.dtype = hidden_states.shape, hidden_states.dtype
        self.device_index = hidden_states.get_device()
        self.switches = switches

    def input_matches(self, hidden_states: torch.Tensor, weight: torch.Tensor, switches: tuple) -> bool:
        """``hidden_states`` (a torch.Tensor, not a subclass: the caller checks) and ``weight`` (in_proj's) have the
        bound shape (the input), dtype and device, ``switches`` are the bound ones, and no capture is under way."""
        return (hidden_states.shape == self.shape and hidden_states.dtype is self.dtype and weight.dtype is self.dtype
                and hidden_states.get_device() == self.device_index and weight.get_device() == self.device_index
                and switches == self.switches and _can_capture(hidden_states))


class _DecodeBinding(_Binding):
    """A cache object bound to the decode graph captured on its tensors, for ``FastMambaLayer.forward``'s fast
    path: ``matches`` is true only when the reference's ``check_forward_args`` would accept the call (no mask)
    and the dispatch would choose this graph, so the call can skip both and replay (parameters replaced by new
    tensors are not detected: ``FastMambaLayer.clear_graphs``). The binding holds no reference to the cache: what
    the graph depends on is the state tensors' layout (address, shape, strides, dtype), so any MambaCache whose
    tensors have the captured layout may replay it (a new cache object that reuses a dead one's id and memory
    included)."""

    __slots__ = ("graph", "conv_layout", "ssm_layout")

    def __init__(self, graph: _DecodeGraph, hidden_states: torch.Tensor, cache: MambaCache, switches: tuple) -> None:
        super().__init__(hidden_states, switches)
        self.graph = graph
        self.conv_layout, self.ssm_layout = _tensor_layout(cache.conv_state), _tensor_layout(cache.ssm_state)

    def matches(self, hidden_states, cache: MambaCache, weight: torch.Tensor, switches: tuple) -> bool:
        """``hidden_states`` is a tensor of the bound shape (b, 1, hidden) and ``input_matches``, and ``cache`` (a
        MambaCache holding two tensors: ``forward`` checks that) has a previous state and tensors of the captured
        layout."""
        if type(hidden_states) is not torch.Tensor or not cache.has_previous_state:
            return False
        return (self.input_matches(hidden_states, weight, switches)
                and _tensor_layout(cache.conv_state) == self.conv_layout
                and _tensor_layout(cache.ssm_state) == self.ssm_layout)


class _PrefillBinding(_Binding):
    """A prefill graph without a mask ("kernels", "whole" or "addressed") bound to the input layout of the call that
    chose it, for ``FastMambaLayer.forward``'s prefill fast path: ``input_matches`` is true only when the reference's
    ``check_forward_args`` would accept a call without cache or mask and the dispatch would choose this graph (the
    key holds nothing else: the shape, dtype and device of hidden_states, no mask, and the switches; for an
    "addressed" graph also the address, which the binding's own key holds), so the call can skip both and replay
    (parameters replaced by new tensors are not detected: ``FastMambaLayer.clear_graphs``).
    """

    __slots__ = ("entry",)

    def __init__(self, entry: _PrefillGraph, hidden_states: torch.Tensor, switches: tuple) -> None:
        super().__init__(hidden_states, switches)
        self.entry = entry


def _as_mask_facts(row_facts: tuple[tuple[int, ...], bool, bool]) -> MaskFacts:
    """``mask_row_facts``' (lengths, binary, left_padded) as the reference's ``MaskFacts``."""
    lengths, binary, left_padded = row_facts
    return MaskFacts(binary=binary, lengths=lengths, left_padded=left_padded)


class _Guess(NamedTuple):
    """What ``FastMambaLayer._guessed_packed_prefill`` found: the checked facts of the mask, the mask the mixer
    applies (``recurrent_mask``) and the replay's (output, cache) if the guess was right, else None."""
    mask: torch.Tensor | None
    facts: MaskFacts
    result: tuple[torch.Tensor, MambaCache] | None


class _PrefillGraph:
    """A prefill from the zero state captured for one key. ``static_in`` is what a call fills before the replay
    and ``static_out`` what it reads after: hidden_states and the layer output for a whole-forward graph, the
    in_proj output and the normed out_proj input for a kernels-only graph; for an "addressed" graph None (its
    in_proj reads the caller's hidden_states at the key's address) and the normed out_proj input; for a "mapped"
    graph (``io`` set, ``run_mapped``) the gathered rows and the packed out_proj output, which calls never touch.
    ``packing``: the key's packed projections (or None). ``replay_stream``: the ``ReplayStream`` of the graphs that
    share this one's memory pool (``FastMambaLayer._prefill_pool``), None for one of its own."""

    def __init__(self, key: tuple, graph_mode: str, graph: torch.cuda.CUDAGraph, static_in: torch.Tensor | None,
                 static_mask: torch.Tensor | None, static_out: torch.Tensor, static_cache: MambaCache,
                 packing: _Packing | None, io: MappedIO | None = None,
                 replay_stream: ReplayStream | None = None) -> None:
        self.key = key  # (FastMambaLayer._prefill_key: the graph's entry in the layer's LRU)
        self.graph_mode = graph_mode  # "whole", "kernels", "addressed" or "mapped" (``_replay_prefill``)
        self.graph = graph
        self.packing = packing
        self.static_in = static_in
        self.static_mask = static_mask
        self.static_out = static_out
        self.static_cache = static_cache
        self.io = io
        # the stream of the last replay (of any graph sharing this one's memory pool: FastMambaLayer._prefill_pool)
        self._stream = replay_stream or ReplayStream(static_out.device)
        self.last_replay = 0  # FastMambaLayer._prefill_replays at this graph's last replay

    def order(self) -> None:
        """Before a replay that is not "mapped" (``run_mapped`` does this itself), and before its static input is
        written: on a stream other than the last replay's, first wait for that one (the graphs sharing this one's
        pool may reuse its memory)."""
        self._stream.same()

    def run_mapped(self, hidden_states: torch.Tensor, cache: MambaCache | None) -> tuple[torch.Tensor, MambaCache]:
        """A "mapped" graph (packed left-padded batch, whole forward): post the token rows' source and the three
        destinations (a new output, the cache's tensors or new ones), replay; returns (output, cache)."""
        src = hidden_states.contiguous()  # (a copy, if one is made, stays alive until the replay)
        out = torch.empty_like(src)
        static = self.static_cache
        if cache is None:
            cache = MambaCache(torch.empty_like(static.conv_state), torch.empty_like(static.ssm_state))
        given = (cache.conv_state, cache.ssm_state)
        dsts = [t if t.is_contiguous() else torch.empty_like(s) for t, s in zip(given, (static.conv_state,
                                                                                         static.ssm_state))]
        self._stream.same()  # (a replay on another stream first waits for the previous one: an ack does not say
        self.io.replay(self.graph, src, (out, *dsts))  # that the replay has finished)
        for t, d in zip(given, dsts):
            if d is not t:  # a given non-contiguous cache tensor: filled in place from the posted copy
                t.copy_(d)
        return out, cache

    def replay(self, mask: torch.Tensor | None, cache: MambaCache | None) -> MambaCache:
        """Copy the mask in, replay, and return the cache: new tensors, or ``cache`` filled in place (nothing
        returned aliases the graph's memory)."""
        if self.static_mask is not None:
            self.static_mask.copy_(mask)
        self.graph.replay()
        if cache is None:
            return MambaCache(self.static_cache.conv_state.clone(), self.static_cache.ssm_state.clone())
        cache.conv_state.copy_(self.static_cache.conv_state)
        cache.ssm_state.copy_(self.static_cache.ssm_state)
        return cache


def _can_capture(hidden_states: torch.Tensor) -> bool:
    """Whether a call on ``hidden_states`` may use a captured graph: CUDA, and the caller is not capturing."""
    return hidden_states.is_cuda and not torch.cuda.is_current_stream_capturing()


def _linear_into(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, out: torch.Tensor) -> None:
    """out (..., out_features) = x (..., in_features) @ weight^T + bias, written into the contiguous ``out``."""
    x2d, out2d = x.reshape(-1, x.shape[-1]), out.view(-1, out.shape[-1])
    if bias is None:
        torch.mm(x2d, weight.t(), out=out2d)
    else:
        torch.addmm(bias, x2d, weight.t(), out=out2d)


def _real_rows_linear(x: torch.Tensor, weight: torch.Tensor, lengths: tuple[int, ...],
                      out: torch.Tensor | None = None) -> torch.Tensor:
    """x (b, L, in) @ weight^T (out, in) on each row's last ``lengths[b]`` positions only -> (b, L, out) in x's
    dtype (into ``out`` when given, contiguous): one cuBLAS call per row, reading and writing contiguous row
    blocks in place. Pad positions are not written."""
    batch, seqlen, _ = x.shape
    if out is None:
        out = x.new_empty(batch, seqlen, weight.shape[0])
    for b, n in enumerate(lengths):
        if n:
            torch.mm(x[b, seqlen - n:], weight.t(), out=out[b, seqlen - n:])
    return out


def _zero_read_pads(zxbcdt: torch.Tensor, lengths: tuple[int, ...], config: GraniteMambaConfig) -> None:
    """Zero the pad positions of a packed in_proj output that the kernels read, as the reference has them
    (in_proj(0) = 0): raw xBC and dt_raw at the d_conv positions before each row's first real token (the conv
    window reaches d_conv - 1 back; the conv state takes the last d_conv columns, pads when a row has fewer than
    d_conv tokens), dt_raw at every other pad (the SSD's decay). z at pads is not read (the norm skips pad rows),
    nor is raw xBC further left (conv tiles of pads only are skipped, and pad outputs are masked)."""
    seqlen, d_conv = zxbcdt.shape[1], config.d_conv
    inter, conv_dim = config.intermediate_size, config.conv_dim
    for b, n in enumerate(lengths):
        pad = seqlen - n
        zxbcdt[b, max(0, pad - d_conv):pad, inter:].zero_()
        if pad > d_conv:
            zxbcdt[b, :pad - d_conv, inter + conv_dim:].zero_()


class _Packing:
    """How the projections of a left-padded batch skip its pads (``FastMambaLayer.pack_padded_gemms``).

    mode "rows": one cuBLAS call per row on its real rows, in place in the padded layout. "packed": the real
    tokens gathered (``index``: their flat positions b * L + l in packed order, built on the device from the mask
    by a stable sort, no host sync), one GEMM into a packed (T, in_proj_dim) buffer that the kernels read through
    the packed varlen layout (``rows``: (b, 2) int64 [base, first], conv1d.py), normed written packed, one
    out_proj GEMM, then unpacked into the output.
    """

    def __init__(self, mode: str, lengths: tuple[int, ...], mask: torch.Tensor) -> None:
        self.mode, self.lengths = mode, lengths
        self.seqlen = mask.shape[1]
        self.zero_read_pads = mode == "rows"
        if mode == "packed":
            order = torch.argsort((mask == 0).reshape(-1).to(torch.int8), stable=True)
            self.index = order[:sum(lengths)]
            self.rows = packed_layout_rows((mask != 0).sum(1), self.seqlen)

    def gather(self, x: torch.Tensor) -> torch.Tensor:
        """(b, L, d) -> (T, d): the real positions, row after row."""
        return x.reshape(-1, x.shape[-1]).index_select(0, self.index)

    def unpack(self, real: torch.Tensor) -> torch.Tensor:
        """(T, d) -> a new (b, L, d): real rows back in place, pad rows 0."""
        return unpack_varlen_rows(real, self.rows, self.seqlen)


class FastMambaLayer(ReferenceMambaLayer):
    """Granite Mamba-2 mixer on Triton kernels; drop-in for ``ReferenceMambaLayer`` (same forward contract).

    Captured graphs read the parameters at their addresses at capture: after replacing a parameter by a new tensor
    call ``clear_graphs()`` (``load_state_dict`` and ``.to()`` need nothing).
    Knobs: ``use_cuda_graphs`` (default True; False runs the CUDA decode step eagerly) and
    ``decode_projections``: "auto" (default), "cublas" or "triton": the decode in_proj / out_proj through cuBLAS or
    as ``granite_decode_linear`` skinny GEMMs (for bf16 layers without projection biases and batches <= 64;
    ``_projection_args``). "auto": at batches <= 2 the GEMV for out_proj (H200, session 6,
    bench/results/session6/run4/: 4.0 vs 7.0 us at B=1, 4.3 vs 7.1 at B=2); above, out_proj and at every batch
    in_proj on the split-K kernel (session 9, bench/results/session9/run2/, weights from HBM: out_proj 5.0 vs 7.4
    us at B=8, 6.9 vs 8.0 at B=64; in_proj level with cuBLAS, 7.8 vs 8.2 at B=1, 8.2 vs 8.2 at B=8, 8.7 vs 8.4 at
    B=64, the same bits at B=1), which also lets a mapped decode graph drop its copy-in and copy-out nodes
    (``_posted_projections``; layer A/Bs in runs 4 and 6: B=8 -4.8 to -5.3 us, B=64 -4.0 to -4.4, B=1 -0.6).
    Session 2 decode knobs (bench/granite/NOTES.md "Session 2: decode"; H200,
    bench/results/session2/granite_decode_s2.json): ``decode_fast_path`` (True: a decode call on a cache bound to
    its graph replays it without the full checks and key, see ``_bound_call``), ``decode_evict_first`` (True: the
    state's evict-first L2 hint in the decode kernel; 71.5 -> 59.9 us per step at B=64 in a graph). (A one-launch
    decode kernel was measured slower in a graph at every batch and removed: git 35bd127.) Session 3:
    ``decode_io`` ("mapped", default, or "copy": how a decode graph takes its token and returns its output; see
    the module docstring). Session 21: ``decode_conv_apart`` (None: by batch, ``decode_conv_apart`` in
    ssd_decode.py; True / False: ``granite_decode_step``'s ``conv_apart``, the conv and the conv-state roll in a
    kernel of their own before the state kernel).
    Prefill knobs, defaults from the H200 measurements (module docstring): ``prefill_graphs`` ("mapped", which is
    "kernels" for batches that are not packed; False, "whole" or "kernels": a CUDA graph per prefill shape),
    ``pack_padded_gemms`` ("packed"; "rows" or False: how left-padded batches skip their pads) and
    ``cb_spread`` (True: ``ssd_chunked_prefill``'s option, C.B^T spread over the head programs) and
    ``ssd_fused_state`` (its ``fused_state``: chunk states and their passing in one sequential kernel; None:
    its default, from the batch) and ``speculate_packed_prefill`` (True: a left-padded prefill whose last two
    calls of the same shape ran the same packed graph replays it before the mask's facts reach the host, see
    ``_guessed_packed_prefill``) and ``prefill_fast_path`` (True: a call without cache or mask of a shape whose
    last full-path call ran an unmasked graph replays it without the full checks and key, see ``_bound_call``;
    session 32; H100, session 33: -9.1 / -24 us per call at L = 4096 / 16384) and ``prefill_address_graphs``
    (True: an unmasked prefill without a cache at an input address seen before replays a graph with in_proj
    inside, read at that address; the module docstring).
    """

    def __init__(self, config: GraniteMambaConfig, layer_idx: int = 0) -> None:
        super().__init__(config, layer_idx)
        self.use_cuda_graphs = True
        self.decode_projections = "auto"
        self.decode_fast_path = True
        self.decode_evict_first = True
        self.decode_io = "mapped"
        self.decode_conv_apart = None
        self.prefill_graphs = "mapped"
        self.pack_padded_gemms = "packed"
        self.cb_spread = True
        self.ssd_fused_state = None
        self.speculate_packed_prefill = True
        self.prefill_fast_path = True
        self.prefill_address_graphs = True
        self._decode_graphs: OrderedDict[tuple, _DecodeGraph] = OrderedDict()
        # cache.ssm_state.data_ptr() -> the binding of the graph captured on that state (forward's fast path), at
        # most _MAX_DECODE_GRAPHS; keyed by the state's address, so a new cache object on the same memory hits too
        self._decode_bound: dict[int, _DecodeBinding] = {}
        self._prefill_graphs: OrderedDict[tuple, _PrefillGraph] = OrderedDict()
        # hidden_states.shape -> the binding of the unmasked graph a call of that shape last ran on the full path
        # (forward's prefill fast path); only graphs in _prefill_graphs are bound
        self._prefill_bound: dict[torch.Size, _PrefillBinding] = {}
        # _prefill_key -> the "addressed" graph (prefill_address_graphs), at most _MAX_ADDRESSED_GRAPHS, the least
        # recently replayed first; _address_key(hidden_states) -> the binding of the one captured on that address
        # (the fast path's first look); only graphs in _addressed_graphs are bound. _seen_addresses: the keys seen,
        # captured or not, each with _prefill_replays at its last sighting (at most _MAX_SEEN_ADDRESSES, the least
        # recently seen forgotten first)
        self._addressed_graphs: OrderedDict[tuple, _PrefillGraph] = OrderedDict()
        self._prefill_addressed: dict[tuple, _PrefillBinding] = {}
        self._seen_addresses: OrderedDict[tuple, int] = OrderedDict()
        self._prefill_replays = 0  # prefill graph replays so far (_ADDRESSED_IDLE_REPLAYS)
        # (shape, dtype, device) -> (memory pool, ReplayStream) shared by the "kernels" and "addressed" graphs of
        # that input: _prefill_pool
        self._prefill_pools: dict[tuple, tuple] = {}
        # _route_key(...) of a masked prefill without a cache -> (the "mapped" graph key its last call on the normal
        # path ran, or None for another path; how many normal-path calls before it in a row ran the same; a right
        # guess leaves it as it is): _guessed_packed_prefill's guess
        self._packed_routes: OrderedDict[tuple, tuple[tuple | None, int]] = OrderedDict()
        self._warned: set[str] = set()
        c = self.config
        self._config_problem = None
        if not all(is_pow2(v) for v in (c.head_dim, c.d_state, c.d_conv)) or c.d_conv < 2:
            self._config_problem = (f"head_dim, d_state and d_conv must be powers of two (d_conv >= 2) for the "
                                    f"kernels, got {c.head_dim}, {c.d_state}, {c.d_conv}")
        self._prefill_config_problem = None
        if c.n_groups != 1 or c.time_step_limit != (0.0, float("inf")) or not is_pow2(c.chunk_size):
            self._prefill_config_problem = (
                f"the prefill kernels need n_groups == 1, time_step_limit == (0, inf) and a power-of-two "
                f"chunk_size, got {c.n_groups}, {c.time_step_limit}, {c.chunk_size}")

    # ----------------------------------------------------------------------------------------- dispatch
    def _unsupported(self, hidden_states: torch.Tensor, decode: bool) -> str | None:
        """Why the kernels cannot run this call (None when they can)."""
        if self._config_problem is not None:
            return self._config_problem
        if not kernels_apply(hidden_states.device):
            return (f"Triton kernels need CUDA tensors (or TRITON_INTERPRET=1 on the CPU), got device "
                    f"{hidden_states.device}")
        if decode:
            if hidden_states.dtype not in _DECODE_DTYPES:
                return f"the decode kernels support {_DECODE_DTYPES}, got {hidden_states.dtype}"
            return None
        if self._prefill_config_problem is not None:
            return self._prefill_config_problem
        if hidden_states.dtype != torch.bfloat16:
            return f"the prefill kernels support torch.bfloat16, got {hidden_states.dtype}"
        c = self.config
        if hidden_states.device.type == "cuda" and min(c.chunk_size, c.head_dim, c.d_state) < 16:
            return (f"on the GPU the prefill kernels' tl.dot tiles need chunk_size, head_dim and d_state >= 16, got "
                    f"{c.chunk_size}, {c.head_dim}, {c.d_state}")
        return None

    def _mask_facts(self, attention_mask: torch.Tensor) -> MaskFacts:
        """The mask's facts from one Triton launch and one copy (``mask_row_facts``) where Triton runs and for the
        dtypes it reads, else the reference's eager ``mask_facts`` (same facts)."""
        if attention_mask.dtype in MASK_DTYPES and kernels_apply(attention_mask.device):
            return _as_mask_facts(mask_row_facts(attention_mask))
        return super()._mask_facts(attention_mask)

    def _warn_once(self, reason: str) -> None:
        if reason not in self._warned:
            self._warned.add(reason)
            warnings.warn(f"FastMambaLayer falls back to the reference forward: {reason}", RuntimeWarning,
                          stacklevel=3)

    def forward(self, hidden_states: torch.Tensor, cache: MambaCache | None = None,
                attention_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, MambaCache]:
        """Same contract as ``ReferenceMambaLayer.forward``: (output (b, L, hidden) model dtype, cache).

        Fast paths for calls without a mask (``_bound_call``): a decode call on a cache bound to its captured graph,
        and a prefill without a cache of a shape bound to its captured graph, replay it directly; everything else
        takes the full checks and dispatch below."""
        if attention_mask is None:
            done = self._bound_call(hidden_states, cache)
            if done is not None:
                return done
        guessed = self._guessed_packed_prefill(hidden_states, cache, attention_mask)
        if guessed is None:
            mask, facts = self.check_forward_args_with_facts(hidden_states, cache, attention_mask)
        elif guessed.result is None:  # a wrong guess: go on with the facts it read
            mask, facts = guessed.mask, guessed.facts
        else:
            out, cache = guessed.result
            cache.has_previous_state = True
            cache.seqlen_offset += hidden_states.shape[1]
            return out, cache
        decode = cache is not None and cache.has_previous_state and hidden_states.shape[1] == 1
        reason = self._unsupported(hidden_states, decode)
        if reason is not None:
            self._warn_once(reason)
            return super().forward(hidden_states, cache, attention_mask)
        with torch.no_grad() if torch.is_grad_enabled() else contextlib.nullcontext():
            if decode:
                out = self._decode(hidden_states, cache)
            else:
                route = None if cache is not None or facts is None else self._route_key(hidden_states, attention_mask)
                out, cache = self._prefill(hidden_states, cache, mask, facts, route)
        cache.has_previous_state = True
        cache.seqlen_offset += hidden_states.shape[1]
        return out, cache

    def _bound_call(self, hidden_states: torch.Tensor, cache: MambaCache | None
                    ) -> tuple[torch.Tensor, MambaCache] | None:
        """``forward`` without a mask by a bound graph, skipping ``check_forward_args`` and the dispatch, or None
        when no binding applies (nothing run). ``decode_fast_path``: a decode call on a MambaCache whose state
        tensors have the layout of a captured graph's (``_DecodeBinding.matches``). ``prefill_fast_path``: a call
        without a cache whose hidden_states have the shape, dtype and device of the last full-path call of that
        shape that ran an unmasked prefill graph (``_PrefillBinding``, ``_Binding.input_matches``), under the same
        switches: the checks it skips would pass (they read only that layout and in_proj's dtype and device when
        there is neither cache nor mask) and the dispatch would choose that graph. A subclass's
        ``check_forward_args_with_facts``, ``_unsupported`` or ``_prefill`` does not run on these paths: set
        ``decode_fast_path`` / ``prefill_fast_path`` False where they must. The host time before in_proj's launch,
        which the GPU idles through, was ~28 us per B = 1 prefill on a slow host (module call 5, checks 6, dispatch
        10; bench/granite/NOTES.md "Session 11"): "Session 32" there. With ``prefill_address_graphs`` the first look
        is for the "addressed" graph bound to hidden_states' address, the second for the shape's binding (the graph
        of the last full-path call of that shape that ran a non-addressed unmasked graph); a call at an address seen
        before whose graph the full path would capture now (``_takes_addressed_graph``) takes the full path."""
        if cache is None:
            if not self.prefill_fast_path or type(hidden_states) is not torch.Tensor:
                return None
            weight, switches = self.in_proj.weight, self._prefill_switches()
            address = self._address_key(hidden_states)
            bound = None if address is None else self._prefill_addressed.get(address)
            if bound is None or not bound.input_matches(hidden_states, weight, switches):
                bound = self._prefill_bound.get(hidden_states.shape)
                if bound is None or not bound.input_matches(hidden_states, weight, switches):
                    return None
                if address is not None and self._takes_addressed_graph(hidden_states, address):
                    return None
            self._graph_lru(bound.entry.graph_mode).move_to_end(bound.entry.key)
            with torch.no_grad() if torch.is_grad_enabled() else contextlib.nullcontext():
                out, cache = self._replay_prefill(bound.entry, hidden_states, None, None)
            cache.has_previous_state = True
            cache.seqlen_offset += hidden_states.shape[1]
            return out, cache
        if not self.decode_fast_path or type(cache) is not MambaCache:
            return None
        ssm = cache.ssm_state
        bound = (self._decode_bound.get(ssm.data_ptr())
                 if type(ssm) is torch.Tensor and type(cache.conv_state) is torch.Tensor else None)
        if bound is None or not bound.matches(hidden_states, cache, self.in_proj.weight, self._decode_switches()):
            return None
        # (no autograd history for the replay's inputs and outputs)
        with torch.no_grad() if torch.is_grad_enabled() else contextlib.nullcontext():
            out = bound.graph.run(hidden_states)
        cache.seqlen_offset += 1
        return out, cache

    # ----------------------------------------------------------------------------------------- prefill
    def _prefill(self, hidden_states: torch.Tensor, cache: MambaCache | None, mask: torch.Tensor | None,
                 facts: MaskFacts | None, route: tuple | None = None) -> tuple[torch.Tensor, MambaCache]:
        """Prefill (no previous state) or multi-token continuation; writes the cache, returns (output, cache).
        ``facts``: the mask's ``MaskFacts`` from the argument check (its lengths decide the packing); ``route``:
        the call's ``_route_key`` (a left-padded call without a cache), whose guess this call's path updates."""
        continuing = cache is not None and cache.has_previous_state
        mode, lengths, graph_mode = self._prefill_route(hidden_states, continuing, mask, facts)
        address = self._address_key(hidden_states) if graph_mode == "kernels" and mask is None else None
        if address is not None and self._takes_addressed_graph(hidden_states, address):
            graph_mode = "addressed"
        if route is not None:
            self._note_route(route, self._prefill_key(hidden_states, mask, lengths, mode, graph_mode)
                             if graph_mode == "mapped" else None)
        if graph_mode is not None:
            entry = self._prefill_graph(hidden_states, mask, lengths, mode, graph_mode)
            if mask is None and graph_mode != "mapped":
                binding = _PrefillBinding(entry, hidden_states, self._prefill_switches())
                if graph_mode == "addressed":
                    self._prefill_addressed[address] = binding
                else:
                    self._prefill_bound[hidden_states.shape] = binding
            return self._replay_prefill(entry, hidden_states, mask, cache)
        if cache is None:
            cache = MambaCache.zeros(self.config, hidden_states.shape[0], device=hidden_states.device,
                                     dtype=hidden_states.dtype)
        packing = None if lengths is None else _Packing(mode, lengths, mask)
        return self._prefill_step(hidden_states, mask, packing, cache, continuing), cache

    def _replay_prefill(self, entry: _PrefillGraph, hidden_states: torch.Tensor, mask: torch.Tensor | None,
                        cache: MambaCache | None) -> tuple[torch.Tensor, MambaCache]:
        """Run the captured prefill ``entry`` (by its ``graph_mode``) on the call's tensors: (output, cache)."""
        self._prefill_replays += 1
        entry.last_replay = self._prefill_replays
        if entry.graph_mode == "mapped":
            return entry.run_mapped(hidden_states, cache)
        entry.order()
        if entry.graph_mode == "whole":
            entry.static_in.copy_(hidden_states)
            cache = entry.replay(mask, cache)
            return entry.static_out.clone(), cache
        if entry.graph_mode == "kernels":  # (an "addressed" graph's in_proj reads hidden_states itself)
            self._in_proj(hidden_states, mask, entry.packing, out=entry.static_in)
        cache = entry.replay(mask, cache)
        return self._out_proj(entry.static_out, entry.packing), cache

    def _prefill_switches(self) -> tuple:
        """The switches the dispatch of a prefill without a cache or mask depends on (``_prefill_route``,
        ``_prefill_key``): a prefill binding is valid only while they are unchanged."""
        return (self.prefill_graphs, self.pack_padded_gemms, self.cb_spread, self.ssd_fused_state,
                self.prefill_address_graphs)

    def _address_key(self, hidden_states: torch.Tensor) -> tuple | None:
        """(address, shape) of ``hidden_states`` when an unmasked prefill of it without a cache may take an
        "addressed" graph (``prefill_address_graphs``, graphs "kernels" or "mapped", a contiguous torch.Tensor),
        else None."""
        if (not self.prefill_address_graphs or self.prefill_graphs not in ("kernels", "mapped")
                or type(hidden_states) is not torch.Tensor or not hidden_states.is_contiguous()):
            return None
        return hidden_states.data_ptr(), hidden_states.shape

    def _takes_addressed_graph(self, hidden_states: torch.Tensor, address: tuple) -> bool:
        """Whether an unmasked "kernels" prefill of ``hidden_states`` at ``address`` (its ``_address_key``) takes
        the address's own graph: the address was seen before (each call is a sighting, remembered now) and that
        graph is held, or there is room for it (fewer than _MAX_ADDRESSED_GRAPHS held, or the address last seen
        within the last _ADDRESSED_IDLE_REPLAYS prefill replays and the least recently replayed graph idle for at
        least as many)."""
        seen = self._seen_addresses
        last_seen = seen.pop(address, None)
        seen[address] = now = self._prefill_replays
        if len(seen) > _MAX_SEEN_ADDRESSES:
            seen.popitem(last=False)
        if last_seen is None:
            return False
        graphs = self._addressed_graphs
        if len(graphs) < _MAX_ADDRESSED_GRAPHS or self._prefill_key(
                hidden_states, None, None, None, "addressed") in graphs:
            return True
        return (now - last_seen < _ADDRESSED_IDLE_REPLAYS
                and now - next(iter(graphs.values())).last_replay >= _ADDRESSED_IDLE_REPLAYS)

    def _prefill_route(self, hidden_states: torch.Tensor, continuing: bool, mask: torch.Tensor | None,
                       facts: MaskFacts | None) -> tuple[str | None, tuple[int, ...] | None, str | None]:
        """What ``_prefill`` runs: (packing mode or None, packed lengths or None, graph mode or None for eager)."""
        if self.prefill_graphs not in _PREFILL_GRAPH_MODES:
            raise ValueError(f"prefill_graphs must be one of {_PREFILL_GRAPH_MODES}, got {self.prefill_graphs!r}")
        if self.pack_padded_gemms not in _PACK_MODES:
            raise ValueError(f"pack_padded_gemms must be one of {list(_PACK_MODES)}, got {self.pack_padded_gemms!r}")
        mode = _PACK_MODES[self.pack_padded_gemms]
        lengths = self._packed_lengths(mask, facts) if mode else None
        graph_mode = None
        if self.prefill_graphs and not continuing and _can_capture(hidden_states):
            graph_mode = self.prefill_graphs
            if graph_mode == "mapped" and not (lengths is not None and mode == "packed"):
                graph_mode = "kernels"  # mapped graphs are for packed left-padded batches
        return mode, lengths, graph_mode

    def _route_key(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor) -> tuple:
        """What a left-padded prefill without a cache is known by before its mask's values are read: the shapes,
        dtypes, device and the prefill switches (``_packed_routes``)."""
        return (tuple(hidden_states.shape), hidden_states.dtype, hidden_states.device, attention_mask.dtype,
                self.prefill_graphs, self.pack_padded_gemms, self.cb_spread, self.ssd_fused_state)

    def _note_route(self, route: tuple, key: tuple | None) -> None:
        """Record that a call of ``route`` ran the "mapped" graph ``key`` (None: another path)."""
        last = self._packed_routes.pop(route, None)
        self._packed_routes[route] = (key, last[1] + 1 if last is not None and last[0] == key else 0)
        if len(self._packed_routes) > 2 * _MAX_PREFILL_GRAPHS:
            self._packed_routes.popitem(last=False)

    def _guessed_packed_prefill(self, hidden_states: torch.Tensor, cache: MambaCache | None,
                                attention_mask: torch.Tensor | None) -> _Guess | None:
        """The speculative path of a left-padded prefill without a cache (``speculate_packed_prefill``).

        A packed graph is chosen by the mask's lengths, which reach the host only through a device-to-host copy:
        the GPU idled from that copy until the graph's replay began (~125 us per B = 8 call on the H200 machine,
        bench/granite/NOTES.md "Session 11"). When the last two calls of this ``_route_key`` ran the same "mapped"
        graph, this checks the arguments' layout (``check_forward_layout``: the same errors), replays that graph
        into new tensors, then reads the mask's facts (``PendingMaskFacts``, taken before the replay, read on a side
        stream after it: not behind it in stream order) and checks the values (the forward's ValueError, also when
        the replay raised: a bad mask's error comes first, as on the normal path; a bad mask costs one replay).
        Returns a ``_Guess``: ``result`` is the replay's (output, cache) when the facts lead to that same graph
        (``_prefill_route``, ``_prefill_key``: the call is done, with the bits of the normal path), else None (the
        replay's outputs are dropped; the caller goes on with the facts read). The path reads the facts itself, so
        a subclass's ``check_forward_args_with_facts`` / ``_mask_facts`` do not run on it (this class's
        ``_mask_facts`` reads the same facts); set ``speculate_packed_prefill`` False where they must. Returns
        None when no guess applies (nothing checked or launched)."""
        if (not self.speculate_packed_prefill or cache is not None or type(attention_mask) is not torch.Tensor
                or type(hidden_states) is not torch.Tensor or attention_mask.dtype not in MASK_DTYPES
                or hidden_states.dim() != 3 or attention_mask.dim() != 2 or not _can_capture(hidden_states)):
            return None
        try:
            route = self._route_key(hidden_states, attention_mask)
            key, repeats = self._packed_routes.get(route, (None, 0))
        except TypeError:  # an unhashable switch value: the normal path's check says what is wrong with it
            return None
        entry = self._prefill_graphs.get(key) if key is not None and repeats >= 1 else None
        if entry is None:  # (a route's entry implies that _unsupported passed: its shapes, dtypes and device)
            return None
        self.check_forward_layout(hidden_states, attention_mask)
        pending = PendingMaskFacts(attention_mask)  # (the mask as it is now; read after the replay is queued)
        try:
            with torch.no_grad():
                result = entry.run_mapped(hidden_states, None)
        except BaseException:  # a bad mask's ValueError first, as the normal path would raise it
            check_binary(_as_mask_facts(pending.result()))
            raise
        facts = check_binary(_as_mask_facts(pending.result()))
        mask = recurrent_mask(attention_mask, hidden_states.shape[1], facts)
        mode, lengths, graph_mode = self._prefill_route(hidden_states, False, mask, facts)
        if graph_mode != "mapped" or self._prefill_key(hidden_states, mask, lengths, mode, graph_mode) != key:
            return _Guess(mask, facts, None)
        self._prefill_graphs.move_to_end(key)
        self._packed_routes.move_to_end(route)
        return _Guess(mask, facts, result)

    def _packed_lengths(self, mask: torch.Tensor | None, facts: MaskFacts | None) -> tuple[int, ...] | None:
        """Real tokens per row when the projections run on real tokens only (a left-padded mask with a real token,
        no projection biases: with a bias the reference's pad rows would not be 0), else None. The lengths come
        with the argument check's one D2H copy (``facts``), no further sync."""
        if mask is None or facts is None or self.in_proj.bias is not None or self.out_proj.bias is not None:
            return None
        return facts.lengths if facts.left_padded and sum(facts.lengths) else None

    def _prefill_step(self, hidden_states: torch.Tensor, mask: torch.Tensor | None, packing: _Packing | None,
                      cache: MambaCache, continuing: bool) -> torch.Tensor:
        """in_proj -> conv -> SSD -> gated norm -> out_proj on (b, L, hidden); writes (and continues from) the
        cache tensors. ``packing``: how the projections skip the pads of a left-padded batch, or None."""
        zxbcdt = self._in_proj(hidden_states, mask, packing)
        if packing is not None and packing.zero_read_pads:
            _zero_read_pads(zxbcdt, packing.lengths, self.config)
        return self._out_proj(self._prefill_kernels(zxbcdt, mask, cache, continuing, packing), packing)

    def _in_proj(self, hidden_states: torch.Tensor, mask: torch.Tensor | None, packing: _Packing | None,
                 out: torch.Tensor | None = None) -> torch.Tensor:
        """in_proj after padding mask #1 -> (b, L, in_proj_dim) ("packed": (T, in_proj_dim), real tokens only),
        into ``out`` when given. "rows": real rows only, pad positions not written (``_zero_read_pads``)."""
        weight = self.in_proj.weight
        if packing is None:
            masked = apply_padding_mask(hidden_states, mask)
            if out is None:
                return F.linear(masked, weight, self.in_proj.bias)
            _linear_into(masked, weight, self.in_proj.bias, out)
            return out
        if packing.mode == "rows":
            return _real_rows_linear(hidden_states, weight, packing.lengths, out)
        real = packing.gather(hidden_states)
        if out is None:
            return F.linear(real, weight)
        _linear_into(real, weight, None, out)
        return out

    def _prefill_kernels(self, zxbcdt: torch.Tensor, mask: torch.Tensor | None, cache: MambaCache,
                         continuing: bool, packing: _Packing | None = None) -> torch.Tensor:
        """The 5 Triton launches between the GEMMs: in_proj output (b, L, in_proj_dim) -> normed (b, L, I) bf16
        (packing "packed": (T, in_proj_dim) -> (T, I) through the packed varlen layout, no pad position read or
        written); writes (and continues from) the cache tensors."""
        c = self.config
        inter, conv_dim = c.intermediate_size, c.conv_dim
        varlen = {}
        if packing is not None and packing.mode == "packed":
            mask, varlen = None, {"packed_rows": packing.rows, "seqlen": packing.seqlen}
        xbc = causal_conv1d_silu_prefill(zxbcdt, self.conv1d.weight, self.conv1d.bias,
                                         conv_state_in=cache.conv_state if continuing else None,
                                         attention_mask=mask, conv_state_out=cache.conv_state, xbc_offset=inter,
                                         **varlen)
        y = ssd_chunked_prefill(xbc, zxbcdt[..., inter + conv_dim:], self.dt_bias, self.A_log, self.D,
                                c.chunk_size, initial_state=cache.ssm_state if continuing else None,
                                ssm_state_out=cache.ssm_state, attention_mask=mask, cb_spread=self.cb_spread,
                                fused_state=self.ssd_fused_state, **varlen)
        if varlen:  # packed rows: a batch of one (T, I) sequence, every row real
            return gated_rmsnorm(y[None], zxbcdt[None, :, :inter], self.norm.weight, c.rms_norm_eps)[0]
        return gated_rmsnorm(y, zxbcdt[..., :inter], self.norm.weight, c.rms_norm_eps, attention_mask=mask)

    def _out_proj(self, normed: torch.Tensor, packing: _Packing | None) -> torch.Tensor:
        """out_proj -> (b, L, hidden), a new tensor; packed: real rows only, 0 at pads (out_proj(0) = 0)."""
        weight = self.out_proj.weight
        if packing is None:
            return F.linear(normed, weight, self.out_proj.bias)
        if packing.mode == "rows":
            out = _real_rows_linear(normed, weight, packing.lengths)
            for b, n in enumerate(packing.lengths):
                out[b, :out.shape[1] - n].zero_()
            return out
        return packing.unpack(F.linear(normed, weight))

    def _prefill_graph(self, hidden_states: torch.Tensor, mask: torch.Tensor | None,
                       lengths: tuple[int, ...] | None, mode: str | None, graph_mode: str) -> _PrefillGraph:
        """The captured prefill for this input shape, mask layout and switches (captured on first use), from the
        LRU of "addressed" graphs or of the others; a capture beyond the LRU's bound drops its oldest graph."""
        graphs = self._graph_lru(graph_mode)
        key = self._prefill_key(hidden_states, mask, lengths, mode, graph_mode)
        entry = graphs.get(key)
        if entry is None:
            entry = self._capture_prefill(key, hidden_states, mask, None if lengths is None else
                                          _Packing(mode, lengths, mask), graph_mode)
            graphs[key] = entry
            if len(graphs) > (_MAX_ADDRESSED_GRAPHS if graphs is self._addressed_graphs else _MAX_PREFILL_GRAPHS):
                dropped = graphs.popitem(last=False)[1]
                _release_graphs([dropped])
                self._prefill_bound = {k: b for k, b in self._prefill_bound.items() if b.entry is not dropped}
                self._prefill_addressed = {k: b for k, b in self._prefill_addressed.items() if b.entry is not dropped}
                live = {e.key[:3] for e in (*self._prefill_graphs.values(), *self._addressed_graphs.values())
                        if e.graph_mode in _POOLED_GRAPH_MODES}
                self._prefill_pools = {k: p for k, p in self._prefill_pools.items() if k in live}
        else:
            graphs.move_to_end(key)
        return entry

    def _graph_lru(self, graph_mode: str) -> OrderedDict:
        """The LRU that holds the prefill graphs of ``graph_mode``: "addressed" ones apart from the others."""
        return self._addressed_graphs if graph_mode == "addressed" else self._prefill_graphs

    def _prefill_pool(self, key: tuple) -> tuple:
        """(memory pool, ReplayStream) of the "kernels" and "addressed" graphs (_POOLED_GRAPH_MODES) whose
        ``_prefill_key`` starts with ``key`` (input shape, dtype, device): their temporaries share the pool, so an
        input seen at several addresses costs one pool (H100, L = 16384: ~600 MiB reserved per graph on a pool of
        its own), and the replays of one pool are ordered by its stream (``_PrefillGraph.order``). Dropped with the
        last such graph (``_prefill_graph``). A stand-in handle off CUDA (``capture_graph`` ignores it there)."""
        got = self._prefill_pools.get(key)
        if got is None:
            device = key[2]
            pool = torch.cuda.graph_pool_handle() if device.type == "cuda" else object()
            got = self._prefill_pools[key] = (pool, ReplayStream(device))
        return got

    def _prefill_key(self, hidden_states: torch.Tensor, mask: torch.Tensor | None, lengths: tuple[int, ...] | None,
                     mode: str | None, graph_mode: str) -> tuple:
        """The key of the captured prefill graph that a call with these facts replays (an "addressed" graph's holds
        hidden_states' address)."""
        return (tuple(hidden_states.shape), hidden_states.dtype, hidden_states.device,
                None if mask is None else mask.dtype, lengths, None if lengths is None else mode, self.cb_spread,
                self.ssd_fused_state, graph_mode, hidden_states.data_ptr() if graph_mode == "addressed" else None)

    def _capture_prefill(self, key: tuple, hidden_states: torch.Tensor, mask: torch.Tensor | None,
                         packing: _Packing | None, graph_mode: str) -> _PrefillGraph:
        """Capture a prefill from the zero state on static inputs and a static cache: the whole forward
        (``graph_mode == "whole"``), the kernels between the GEMMs ("kernels"; "rows" packing: the static
        in_proj output's pad positions that the kernels read are zeroed once here, calls never write
        them), in_proj and those kernels on the caller's hidden_states at its address ("addressed", unmasked, no
        packing: no reference to the caller's tensor is kept), or ("mapped", "packed" packing only) the whole
        forward between ``MappedIO``'s row gather from the caller's hidden states and its writes to the caller's
        output and cache tensors. The warm-up runs on copies of the caller's inputs (or, "mapped" and "addressed",
        reads them), which stay untouched. ``packing`` (its index tensors) is
        kept with the graph: the key holds the lengths, so every call of the key has the same one. ``key``: the
        graph's ``_prefill_key``, kept with it."""
        device = hidden_states.device
        # static buffers, written in place by later (maybe non-inference) calls; inference_mode(False) alone would
        # turn grad mode on (and torch.mm(out=) refuses operands that require grad)
        with torch.inference_mode(False), torch.no_grad():
            # "packed": the graph reads no mask (the packing's index and row table, fixed by the key's lengths)
            packed = packing is not None and packing.mode == "packed"
            static_mask = None if mask is None or packed else mask.clone(memory_format=torch.contiguous_format)
            static_cache = MambaCache.zeros(self.config, hidden_states.shape[0], device=device,
                                            dtype=hidden_states.dtype)
            io = None
            if graph_mode == "mapped":
                static_in, step, io, warm = self._mapped_prefill_step(hidden_states, packing, static_cache)
            elif graph_mode == "whole":
                static_in = hidden_states.clone(memory_format=torch.contiguous_format)

                def step():
                    return self._prefill_step(static_in, static_mask, packing, static_cache, False)
            elif graph_mode == "addressed":
                static_in = None

                def step():
                    zxbcdt = self._in_proj(hidden_states, None, None)
                    return self._prefill_kernels(zxbcdt, None, static_cache, False)
            else:
                static_in = self._in_proj(hidden_states, mask, packing)
                if packing is not None and packing.zero_read_pads:
                    _zero_read_pads(static_in, packing.lengths, self.config)

                def step():
                    return self._prefill_kernels(static_in, static_mask, static_cache, False, packing)

            pool, stream = self._prefill_pool(key[:3]) if graph_mode in _POOLED_GRAPH_MODES else (None, None)
            graph, static_out = capture_graph(step, step, device, pool=pool)
        return _PrefillGraph(key, graph_mode, graph, static_in, static_mask, static_out, static_cache, packing, io,
                             stream)

    def _mapped_prefill_step(self, hidden_states: torch.Tensor, packing: _Packing, static_cache: MambaCache):
        """The "mapped" prefill graph's body and buffers: gather the real rows of the posted hidden states
        (``MappedIO.gather_in``), in_proj, the 5 kernels on the packed layout, out_proj, unpack into posted
        output 0, copy conv_state / ssm_state to posted outputs 1 / 2 (the last acknowledges). Returns (static
        rows, body, io, warm-up tensors); the warm-up's addresses are posted here (the caller's hidden states,
        read only, and scratch outputs: the returned tuple keeps them alive through the capture)."""
        rows = torch.empty(sum(packing.lengths), hidden_states.shape[-1], device=hidden_states.device,
                           dtype=hidden_states.dtype)
        io = MappedIO(hidden_states.device, n_out=3)
        warm = (hidden_states.contiguous(),
                torch.empty(hidden_states.shape, dtype=hidden_states.dtype, device=hidden_states.device),
                torch.empty_like(static_cache.conv_state), torch.empty_like(static_cache.ssm_state))
        io.post(warm[0], warm[1:])

        def step():
            io.gather_in(rows, packing.index)
            normed = self._prefill_kernels(F.linear(rows, self.in_proj.weight), None, static_cache, False, packing)
            out = F.linear(normed, self.out_proj.weight)
            unpack_varlen_rows(out, packing.rows, packing.seqlen, out_address=io.dst_address(0))
            io.copy_out(static_cache.conv_state, slot=1, ack=False)
            io.copy_out(static_cache.ssm_state, slot=2, ack=True)
            return out
        return rows, step, io, warm

    # ----------------------------------------------------------------------------------------- decode
    def _decode_step(self, hidden_states: torch.Tensor, conv_state: torch.Tensor, ssm_state: torch.Tensor,
                     io: MappedIO | None = None,
                     counters: tuple[torch.Tensor | None, torch.Tensor | None] | None = None) -> torch.Tensor:
        """in_proj -> fused decode kernels -> out_proj for (b, 1, hidden); updates the two states in place.
        ``io`` (a mapped decode graph's MappedIO, its table already fetched): projections on the split-K kernel
        read the posted token (in_proj) and write the posted output (out_proj, also the GEMV), as
        ``_posted_projections`` says; a returned tensor that was not written is a placeholder. ``counters``: the
        split-K arrival counters of in_proj and out_proj (zeros kept by a graph, None for a projection not split
        over K; None: new ones per call)."""
        rows, dtype = hidden_states.shape[0], hidden_states.dtype
        in_args, out_args = self._projection_args(self.in_proj, rows, dtype), self._projection_args(
            self.out_proj, rows, dtype)
        x = hidden_states[:, 0]
        if in_args is None:
            zxbcdt = F.linear(x, self.in_proj.weight, self.in_proj.bias)
        else:
            if io is not None and in_args["kernel"] == "splitk":
                in_args["posted_x"] = (io.stash, 1)
            zxbcdt = granite_decode_linear(x, self.in_proj.weight, counters=counters and counters[0], **in_args)
        y = granite_decode_step(zxbcdt, conv_state, ssm_state, self.conv1d.weight, self.conv1d.bias, self.dt_bias,
                                self.A_log, self.D, self.norm.weight, self.config.rms_norm_eps,
                                evict_first=self.decode_evict_first, conv_apart=self.decode_conv_apart)
        if out_args is None:
            return F.linear(y, self.out_proj.weight, self.out_proj.bias)[:, None]
        if io is not None:
            out_args["posted_out"] = (io.stash, io.dst_word(0))
        return granite_decode_linear(y, self.out_proj.weight, counters=counters and counters[1], **out_args)[:, None]

    def _projection_args(self, linear: torch.nn.Linear, rows: int, dtype: torch.dtype) -> dict | None:
        """How the decode projection ``linear`` of ``rows`` rows runs: None for cuBLAS, else the keyword arguments
        of ``granite_decode_linear`` (bf16 layers without projection biases, at most 64 rows). "triton": the
        GEMV up to 8 rows, the split-K kernel unsplit above. "auto": in_proj on the split-K kernel, out_proj on
        the GEMV up to ``_AUTO_GEMV_ROWS`` rows and on the split-K kernel above, with the ``_AUTO_SPLITK`` tiles."""
        mode = self.decode_projections
        if mode not in _DECODE_PROJECTIONS:
            raise ValueError(f"decode_projections must be one of {_DECODE_PROJECTIONS}, got {mode!r}")
        if mode == "cublas" or linear.bias is not None or dtype != torch.bfloat16 or rows > 64:
            return None
        if mode == "triton":
            return {"kernel": "gemv" if rows <= GEMV_MAX_ROWS else "splitk"}
        if rows <= _AUTO_GEMV_ROWS and linear is self.out_proj:
            return {"kernel": "gemv"}
        name = "in_proj" if linear is self.in_proj else "out_proj"
        block_n, split, block_k = next(tiles for limit, tiles in _AUTO_SPLITK[name] if rows <= limit)
        block_k = min(block_k, max(16, triton.next_power_of_2(linear.in_features)))
        return {"kernel": "splitk", "block_n": block_n, "block_k": block_k,
                "split": min(split, triton.cdiv(linear.in_features, block_k))}

    def _posted_projections(self, rows: int, dtype: torch.dtype) -> tuple[bool, bool]:
        """In a mapped decode graph: (in_proj reads the posted token itself: the split-K kernel, so the graph has
        no copy-in; out_proj writes the posted output itself: a Triton projection, so no copy-out)."""
        in_args = self._projection_args(self.in_proj, rows, dtype)
        return (in_args is not None and in_args["kernel"] == "splitk",
                self._projection_args(self.out_proj, rows, dtype) is not None)

    def _decode_switches(self) -> tuple:
        """The switches a captured decode graph depends on (a binding is valid only while they are unchanged)."""
        return (self.use_cuda_graphs, self.decode_projections, self.decode_evict_first, self.decode_io,
                self.decode_conv_apart)

    def _decode(self, hidden_states: torch.Tensor, cache: MambaCache) -> torch.Tensor:
        """One token (b, 1, hidden) -> (b, 1, hidden); cache states updated in place."""
        if not self.use_cuda_graphs or not _can_capture(hidden_states):
            return self._decode_step(hidden_states, cache.conv_state, cache.ssm_state)
        entry = self._decode_graph(hidden_states, cache)
        self._bind_decode(entry, hidden_states, cache)
        return entry.run(hidden_states)

    def _decode_graph(self, hidden_states: torch.Tensor, cache: MambaCache) -> _DecodeGraph:
        """The captured decode step for ``hidden_states``' shape on ``cache`` (captured on first use)."""
        conv, ssm = cache.conv_state, cache.ssm_state
        key = (hidden_states.shape[0], hidden_states.dtype, hidden_states.device, conv.data_ptr(), conv.stride(),
               ssm.data_ptr(), ssm.stride(), self._decode_switches())
        entry = self._decode_graphs.get(key)
        if entry is None:
            entry = self._capture_decode(hidden_states, cache)
            self._decode_graphs[key] = entry
            if len(self._decode_graphs) > _MAX_DECODE_GRAPHS:
                _, dropped = self._decode_graphs.popitem(last=False)
                _release_graphs([dropped])
                self._decode_bound = {k: b for k, b in self._decode_bound.items() if b.graph is not dropped}
        return entry

    def _bind_decode(self, entry: _DecodeGraph, hidden_states: torch.Tensor, cache: MambaCache) -> None:
        """Bind ``cache``'s state address to ``entry`` for the fast path (replacing its old binding; the oldest goes
        beyond _MAX_DECODE_GRAPHS bindings)."""
        key = cache.ssm_state.data_ptr()
        self._decode_bound.pop(key, None)
        if len(self._decode_bound) >= _MAX_DECODE_GRAPHS:
            del self._decode_bound[next(iter(self._decode_bound))]
        self._decode_bound[key] = _DecodeBinding(entry, hidden_states, cache, self._decode_switches())

    def _capture_decode(self, hidden_states: torch.Tensor, cache: MambaCache) -> _DecodeGraph:
        """Capture the decode step on ``cache``'s tensors. The warm-up (Triton compile, cuBLAS set-up) runs on
        copies of the cache, so capturing leaves the caller's cache untouched (captured kernels do not run).
        ``decode_io`` "mapped": the graph reads and writes the posted addresses (``MappedIO``, see ``_DecodeGraph``):
        as ``_posted_projections`` says, in_proj reads the posted token itself (else a copy-in, inside the fetch
        for small batches, precedes it) and out_proj writes the posted output itself, the fetch acknowledging
        (else a last copy-out node does and acknowledges)."""
        if self.decode_io not in _DECODE_IO_MODES:
            raise ValueError(f"decode_io must be one of {_DECODE_IO_MODES}, got {self.decode_io!r}")
        device = hidden_states.device
        # static buffers, written in place by later (maybe non-inference) calls; inference_mode(False) alone would
        # turn grad mode on (and torch.mm(out=) refuses operands that require grad)
        with torch.inference_mode(False), torch.no_grad():
            static_in = torch.randn_like(hidden_states, memory_format=torch.contiguous_format)
            scratch = cache.clone()
            io = MappedIO(device) if self.decode_io == "mapped" else None
            # the projections reading the posted token / writing the posted output themselves (no copy nodes; with
            # a posted output the fetch acknowledges)
            x_posted, out_posted = (self._posted_projections(hidden_states.shape[0], hidden_states.dtype)
                                    if io is not None else (False, False))
            # arrival counters for a projection split over K (None for one that is not: it needs none)
            counters = tuple(
                torch.zeros(triton.cdiv(lin.out_features, _SPLITK_MIN_BLOCK_N), device=device, dtype=torch.int32)
                if (self._projection_args(lin, hidden_states.shape[0], hidden_states.dtype) or {}).get("split", 1) > 1
                else None for lin in (self.in_proj, self.out_proj))
            # scratch and warm_out: allocated on the current stream, used by the side-stream warm-up, freed after
            # capture_graph made the current stream wait for it (stream-ordered reuse is then safe)
            warm_out = None if io is None else torch.empty_like(static_in)
            if io is not None:  # the warm-up's copies: static_in onto itself, the output into warm_out
                io.post(static_in, (warm_out,))

            def step(conv_state: torch.Tensor, ssm_state: torch.Tensor) -> torch.Tensor:
                if io is None:
                    return self._decode_step(static_in, conv_state, ssm_state, counters=counters)
                if x_posted:
                    io.fetch(ack=out_posted)
                else:
                    io.copy_in(static_in, ack=out_posted)
                out = self._decode_step(static_in, conv_state, ssm_state, io, counters)
                if not out_posted:
                    io.copy_out(out)
                return out
            graph, static_out = capture_graph(lambda: step(scratch.conv_state, scratch.ssm_state),
                                         lambda: step(cache.conv_state, cache.ssm_state), device)
        return _DecodeGraph(graph, static_in, static_out, io, counters)

    def __getstate__(self):
        # Captured graphs are bound to this layer's and the caches' memory: copies and pickles start without them.
        state = super().__getstate__().copy()
        state["_decode_graphs"] = OrderedDict()
        state["_decode_bound"] = {}
        state["_prefill_graphs"] = OrderedDict()
        state["_prefill_bound"] = {}
        state["_addressed_graphs"] = OrderedDict()
        state["_prefill_addressed"] = {}
        state["_prefill_pools"] = {}
        state["_seen_addresses"] = OrderedDict()
        state["_packed_routes"] = OrderedDict()
        return state

    def clear_graphs(self) -> None:
        """Drop every captured CUDA graph and every decode and prefill binding (the next calls capture anew). Needed
        after a parameter is replaced by a new tensor (``layer.in_proj.weight = ...`` or ``param.data = ...``): graphs
        read the parameters at the addresses they had when captured. ``load_state_dict`` (copies in place) and
        ``.to()`` / ``.cuda()`` / ``.half()`` (drop the graphs themselves) need nothing."""
        _release_graphs([*self._decode_graphs.values(), *self._prefill_graphs.values(),
                         *self._addressed_graphs.values()])
        self._decode_graphs.clear()
        self._decode_bound.clear()
        self._prefill_graphs.clear()
        self._prefill_bound.clear()
        self._addressed_graphs.clear()
        self._prefill_addressed.clear()
        self._prefill_pools.clear()
        self._seen_addresses.clear()
        self._packed_routes.clear()

    def _apply(self, fn, *args, **kwargs):
        # .to()/.cuda()/.half() move the parameters: the captured graphs point at the old ones.
        self.clear_graphs()
        return super()._apply(fn, *args, **kwargs)
