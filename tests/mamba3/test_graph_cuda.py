"""The full-VJP graph path on a GPU with the real kernels: captured replays on fresh inputs give the direct call's
bits, across streams too, and the default (graph=None) path captures on a key's second call. CUDA only (the CPU
tests run the interpreter's stand-in for a graph: tests/mamba3/test_graph.py)."""
import pytest
import torch

from ssmkit.mamba3 import graph as graph_module
from ssmkit.mamba3 import mamba3_siso_varlen_joint_states_full_vjp
from ssmkit.mamba3.inputs import make_inputs

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
DEVICE = torch.device("cuda")


def _assert_bits(got, want):
    assert len(got) == len(want) == 16
    assert all(torch.equal(g, w) for g, w in zip(got, want))


def test_replays_on_fresh_inputs_and_other_streams_match_the_direct_call():
    graph_module.clear_graphs()
    seqlens = [200, 1, 130, 64]
    sets = [make_inputs(seqlens, seed=s, device=DEVICE) for s in range(4)]
    direct = [mamba3_siso_varlen_joint_states_full_vjp(**a, graph=False) for a in sets]
    kept = []
    for a, want in zip(sets, direct):  # the first graph call captures, the others replay
        got = mamba3_siso_varlen_joint_states_full_vjp(**a, graph=True)
        _assert_bits(got, want)
        kept.append(got)
    side = torch.cuda.Stream()
    for a, want in zip(sets[:2], direct[:2]):  # replays queued on another stream, back to back
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            got = mamba3_siso_varlen_joint_states_full_vjp(**a, graph=True)
        torch.cuda.current_stream().wait_stream(side)
        _assert_bits(got, want)
    got = mamba3_siso_varlen_joint_states_full_vjp(**sets[3], graph=True)  # and back on the default stream
    _assert_bits(got, direct[3])
    ptrs = [r.data_ptr() for rs in kept for r in rs]
    assert len(set(ptrs)) == len(ptrs)


def test_default_path_captures_on_the_second_call_and_queues_without_syncs():
    graph_module.clear_graphs()
    sets = [make_inputs([300, 77], seed=10 + s, device=DEVICE) for s in range(3)]
    direct = [mamba3_siso_varlen_joint_states_full_vjp(**a, graph=False) for a in sets]
    first = mamba3_siso_varlen_joint_states_full_vjp(**sets[0])
    assert not graph_module._GRAPHS
    outs = [mamba3_siso_varlen_joint_states_full_vjp(**sets[i % 3]) for i in range(1, 10)]  # queued, no sync
    assert len(graph_module._GRAPHS) == 1
    _assert_bits(first, direct[0])
    for i, got in enumerate(outs, 1):
        _assert_bits(got, direct[i % 3])
