"""The full forward + VJP call as one CUDA-graph replay (bench/mamba3/NOTES.md "Session 2: host time").

Why: the kernels of one call take ~1.3 ms of GPU time but the call took ~0.45 ms longer in wall time (Python
launch work of ~10 Triton launches and ~30 allocations, and GPU idle gaps behind it in the short forward kernels).
A replay costs one launch. Per (device, the 17 argument shapes and dtypes, launch configs) one graph is captured on
first use; a call copies its 17 arguments into the graph's static inputs, replays, and returns clones of the 16
static outputs, so nothing returned aliases graph memory and a later call cannot change an earlier result. The
kernels read cu_seqlens on the device and take no decision from device data on the host, so one graph serves
every cu_seqlens of the same length and every T with the same shapes. At most ``MAX_GRAPHS`` are kept.
"""
from typing import Callable, Hashable

import torch

from ssmkit.kernels.cuda_graphs import GraphLRU, capture_graph

MAX_GRAPHS = 4


class _FullCallGraph:
    """One captured call: static inputs (the 17 arguments) -> static outputs (the 16 results)."""

    def __init__(self, graph: torch.cuda.CUDAGraph, static_in: tuple, static_out: tuple) -> None:
        self.graph = graph
        self.static_in = static_in
        self.static_out = static_out

    def run(self, args: tuple) -> tuple:
        """Copy ``args`` in, replay, return fresh copies of the outputs."""
        for dst, src in zip(self.static_in, args):
            dst.copy_(src)
        self.graph.replay()
        return tuple(t.clone() for t in self.static_out)


_GRAPHS = GraphLRU(MAX_GRAPHS)


def _capture_call(step: Callable[..., tuple], args: tuple) -> _FullCallGraph:
    # static buffers hold this call's values before the warm-up (the kernels read cu_seqlens: garbage would send
    # them out of bounds); no_grad + inference_mode(False): later calls may copy into them in any mode
    with torch.inference_mode(False), torch.no_grad():
        static_in = tuple(a.clone(memory_format=torch.contiguous_format) for a in args)
        graph, static_out = capture_graph(lambda: step(*static_in), lambda: step(*static_in), args[0].device)
    return _FullCallGraph(graph, static_in, tuple(static_out))


def run_graphed(step: Callable[..., tuple], args: tuple, key: Hashable) -> tuple:
    """``step(*args)`` through the captured graph for (key, device, shapes and dtypes of ``args``).

    ``step`` must be a pure function of its tensor arguments that launches the same work for the same shapes.
    ``args`` are contiguous tensors on one CUDA device.
    """
    full_key = (key, args[0].device, tuple((tuple(a.shape), a.dtype) for a in args))
    entry = _GRAPHS.get(full_key, lambda: _capture_call(step, args))
    return entry.run(args)


def clear_graphs() -> None:
    """Drop every captured call (frees their memory once no replay is in flight)."""
    _GRAPHS.clear()
