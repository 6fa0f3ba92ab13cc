"""The full-VJP call as one captured CUDA graph per (T, S, device, launch configs): host time per call ~ one replay.

Why: a direct call is 9 Triton launches and ~40 allocations, 0.6-1.5 ms of host time on the H200 machines against
0.23-0.75 ms of GPU work at the visible panels (bench/mamba3/NOTES.md "Session 6", host time), so the call was
host-bound. The graph holds static copies of the 17 arguments and the 16 results, and the kernels' workspace in its
private memory pool. Its nodes: the ``MappedIO`` table fetch and one copy of all 17 posted arguments into the static
ones (``SlotCopy``), the forward and backward kernels exactly as the direct call launches them, one copy of the 16
static results to the posted new tensors (which acknowledges the replay). A call allocates the 16 results, posts
the 33 addresses to pinned host memory and replays; the results of the next call are allocated right after the
replay, while the GPU runs it (host time off the call's critical path: the GPU idles until the replay is
launched), and used by the next call on the same stream. Results are bit-identical to the direct call (same kernels,
same launch configurations, on the same values). The first call with a new key runs the body eagerly (Triton
compiles there; its results are that call's results), then captures it.

Off CUDA (CPU tensors under TRITON_INTERPRET=1, tests only) the "graph" is ``capture_graph``'s stand-in, whose
replay runs the same body again in the interpreter.
"""
from __future__ import annotations

from collections import OrderedDict

import torch

from ssmkit.kernels.common.mapped_io import MappedIO, SlotCopy, capture_graph
from ssmkit.kernels.mamba3.bwd import Mamba3BwdGrads, allocate_grads, mamba3_siso_bwd
from ssmkit.kernels.mamba3.fwd import allocate_fwd_outputs, mamba3_siso_fwd

#: ``graph=None`` (the entry's default) takes the graph up to this many tokens. The graph's copies cost GPU time
#: (~0.018 ms per 1000 tokens on the H200) that pays only while the direct call's host time (~0.6-1.3 ms) is not
#: hidden behind its GPU work (~0.33 ms per 1000 tokens). H200, session 7 run 1 (bench/results/session7/run1),
#: wall ms direct -> graph: T = 580-2432 faster by 0.04-0.34 (c1: 1.340 -> 0.998); T = 4368 (c1 x2) slower,
#: 1.437 -> 1.504; T = 8736 slower, 2.730 -> 2.884.
GRAPH_MAX_TOKENS = 3072
#: Captured graphs kept (least recently used dropped first): each holds its static arguments, results and
#: workspace, ~0.3 GB at T = 2184 and growing linearly in T.
MAX_GRAPHS = 8
_N_ARGS, _N_RESULTS = 17, 16


def _allocate_results(args) -> tuple:
    """The 16 uninitialised results for the 17 arguments ``args`` (forward outputs, then the gradients)."""
    q = args[0]
    return (*allocate_fwd_outputs(q.shape[0], args[11].numel() - 1, q.device), *allocate_grads(*args[:11]))


def _launch_into(args, results, fwd_config, bwd_config) -> None:
    """The direct call's kernels on ``args`` (17 contiguous tensors), writing ``results`` (16 tensors)."""
    inputs, cotangents = args[:12], args[12:]
    *_, saved = mamba3_siso_fwd(*inputs, config=fwd_config, validate=False, out=results[:5])
    mamba3_siso_bwd(*inputs, saved, *cotangents, config=bwd_config, grads=Mamba3BwdGrads(*results[5:]))


class FullVjpGraph:
    """One captured full-VJP call: static arguments and results, the address table, the graph (see the module
    docstring). ``run(args)`` takes 17 contiguous, 4-byte aligned tensors of the captured shapes and dtypes (the
    caller checks) and returns 16 new result tensors."""

    def __init__(self, args, fwd_config, bwd_config) -> None:
        self.static_args = tuple(torch.empty_like(x, memory_format=torch.contiguous_format) for x in args)
        self.static_results = _allocate_results(self.static_args)
        self.copy_in, self.copy_out = SlotCopy(self.static_args), SlotCopy(self.static_results)
        self.io = MappedIO(args[0].device, n_out=_N_RESULTS, n_in=_N_ARGS)
        self.fwd_config, self.bwd_config = fwd_config, bwd_config
        self.graph = None
        self._spare, self._spare_stream = None, None  # the next call's results and the stream they belong to

    def _new_results(self) -> tuple:
        return tuple(torch.empty_like(x) for x in self.static_results)

    def _stream(self):
        """The caller's current stream (None off CUDA): spare results are handed out on the same stream only."""
        device = self.static_results[0].device
        return torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else None

    def _body(self) -> None:
        self.io.copy_in_slots(self.copy_in)
        _launch_into(self.static_args, self.static_results, self.fwd_config, self.bwd_config)
        self.io.copy_out_slots(self.copy_out, ack=True)

    def run(self, args) -> tuple:
        """Post ``args`` and 16 new result tensors, run the graph (the first call: the body eagerly, then the
        capture), allocate the next call's results, return this call's."""
        stream = self._stream()
        results, self._spare = self._spare, None
        if results is None or self._spare_stream != stream:
            results = self._new_results()
        if self.graph is None:
            self.io.post(args, results)
            self.graph, _ = capture_graph(self._body, self._body, args[0].device)
        else:
            self.io.replay(self.graph, args, results)
        self._spare, self._spare_stream = self._new_results(), stream
        return results


_GRAPHS: OrderedDict[tuple, FullVjpGraph] = OrderedDict()


def _aligned(x: torch.Tensor) -> torch.Tensor:
    """x contiguous and 4-byte aligned (the slot copies move 32-bit words): x itself, or a new copy."""
    if x.is_contiguous() and x.data_ptr() % 4 == 0:
        return x
    return x.clone(memory_format=torch.contiguous_format)  # (a new allocation: aligned)


def graph_applies(graph: bool | None, q) -> bool:
    """Whether the full-VJP entry takes the graph for its ``graph`` argument and its first argument ``q``: as
    forced (True / False), else (None) for CUDA tensors of at most GRAPH_MAX_TOKENS tokens while the caller is not
    capturing a graph itself."""
    if graph is not None:
        return bool(graph)
    return q.is_cuda and q.shape[0] <= GRAPH_MAX_TOKENS and not torch.cuda.is_current_stream_capturing()


def full_vjp_graphed(args, fwd_config, bwd_config) -> tuple:
    """The 16 results of the full-VJP call on ``args`` (the 17 validated arguments, any layout) through the graph
    of their key, captured on first use (the key: T, S, device, configs)."""
    args = tuple(_aligned(x) for x in args)
    q = args[0]
    key = (q.shape[0], args[11].shape[0] - 1, q.device, fwd_config, bwd_config)
    graph = _GRAPHS.get(key)
    if graph is None:
        graph = _GRAPHS[key] = FullVjpGraph(args, fwd_config, bwd_config)
        while len(_GRAPHS) > MAX_GRAPHS:
            _GRAPHS.popitem(last=False)[1].io.drain()  # (no replay of a dropped graph is left pending)
    else:
        _GRAPHS.move_to_end(key)
    return graph.run(args)


def clear_graphs() -> None:
    """Drop every captured full-VJP graph (and the memory it holds), after their pending replays."""
    while _GRAPHS:
        _GRAPHS.popitem()[1].io.drain()
