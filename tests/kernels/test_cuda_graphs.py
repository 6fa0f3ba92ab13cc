"""GraphLRU (ssmkit.kernels.cuda_graphs): entries made once per key, least recently used dropped first."""
import pytest
import torch

from ssmkit.kernels.cuda_graphs import GraphLRU, can_capture


def test_graph_lru_makes_once_per_key_and_drops_least_recently_used():
    made = []

    def maker(key):
        return lambda: made.append(key) or f"entry-{key}"

    lru = GraphLRU(2)
    assert lru.get("a", maker("a")) == "entry-a"
    assert lru.get("b", maker("b")) == "entry-b"
    assert lru.get("a", maker("a")) == "entry-a"  # hit: "a" becomes the most recent
    lru.get("c", maker("c"))  # drops "b"
    assert len(lru) == 2
    lru.get("a", maker("a"))
    lru.get("b", maker("b"))
    assert made == ["a", "b", "c", "b"]
    lru.clear()
    assert len(lru) == 0


def test_graph_lru_rejects_zero_capacity_and_cpu_tensors_never_capture():
    with pytest.raises(ValueError, match="max_entries"):
        GraphLRU(0)
    assert not can_capture(torch.ones(2))
