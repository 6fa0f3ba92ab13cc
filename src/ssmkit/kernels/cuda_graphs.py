"""CUDA-graph plumbing shared by the fast paths: capture after a warm-up, and a small LRU of captured entries.

A captured entry replays fixed kernels on fixed addresses, so a caller copies its inputs into the entry's static
buffers, replays, and clones what it returns (nothing handed to a user may alias graph memory).
"""
from collections import OrderedDict
from typing import Callable, Hashable

import torch


def can_capture(t: torch.Tensor) -> bool:
    """Whether a call on ``t`` may use a captured graph: a CUDA tensor, and the caller is not capturing."""
    return t.is_cuda and not torch.cuda.is_current_stream_capturing()


def capture_graph(warm_up: Callable[[], object], body: Callable[[], object],
                  device: torch.device) -> tuple[torch.cuda.CUDAGraph, object]:
    """Run ``warm_up()`` on a side stream (Triton compiles, cuBLAS sets up), then capture ``body()`` into a new
    graph; returns the graph and body's result (its static outputs). The captured kernels do not run here."""
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        warm_up()
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        result = body()
    return graph, result


class GraphLRU:
    """At most ``max_entries`` captured entries by key; the least recently used one is dropped first."""

    def __init__(self, max_entries: int) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.max_entries = max_entries
        self._entries: OrderedDict = OrderedDict()

    def get(self, key: Hashable, make: Callable[[], object]) -> object:
        """The entry for ``key``, made by ``make()`` (and kept) on a miss."""
        entry = self._entries.get(key)
        if entry is None:
            entry = make()
            self._entries[key] = entry
            if len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        else:
            self._entries.move_to_end(key)
        return entry

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
