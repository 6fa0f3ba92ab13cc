"""The full-VJP graph path on a GPU with the real kernels: captured replays on fresh inputs give the direct call's
bits, across streams too, and the default (graph=None) path captures on a key's second call; the forward's rotate
kernel on a side stream (as the graph launches it) gives the one-stream bits. CUDA only (the CPU tests run the
interpreter's stand-in for a graph: tests/mamba3/test_graph.py); the finish kernel launched by programmatic dependent
launch gives the bits of its plain launch, and so does the side kernel."""
import pytest
import torch

from ssmkit.kernels.mamba3 import mamba3_siso_fwd
from ssmkit.kernels.mamba3.bwd import Mamba3BwdConfig
from ssmkit.mamba3 import graph as graph_module
from ssmkit.mamba3 import mamba3_siso_varlen_joint_states_full_vjp
from ssmkit.mamba3.inputs import make_inputs
from ssmkit.mamba3.shapes import CHUNK, INPUT_NAMES

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


def test_default_path_captures_on_the_second_call_and_queues_without_syncs(monkeypatch):
    """... and the calls after the capture replay through the entry's fast path (``replay_recent``)."""
    from ssmkit.mamba3 import op

    fast = []
    real = op.replay_recent
    monkeypatch.setattr(op, "replay_recent", lambda *a: fast.append(real(*a)) or fast[-1])
    graph_module.clear_graphs()
    sets = [make_inputs([300, 77], seed=10 + s, device=DEVICE) for s in range(3)]
    direct = [mamba3_siso_varlen_joint_states_full_vjp(**a, graph=False) for a in sets]
    first = mamba3_siso_varlen_joint_states_full_vjp(**sets[0])
    assert not graph_module._GRAPHS
    outs = [mamba3_siso_varlen_joint_states_full_vjp(**sets[i % 3]) for i in range(1, 10)]  # queued, no sync
    assert len(graph_module._GRAPHS) == 1
    assert [got is not None for got in fast] == [False] * 5 + [True] * 8  # (3 direct calls, first, capture)
    _assert_bits(first, direct[0])
    for i, got in enumerate(outs, 1):
        _assert_bits(got, direct[i % 3])


def test_rotate_kernel_on_a_side_stream_matches_one_stream():
    """The forward with the angle-carry and rotate kernels on a side stream against one stream (where the rotate
    kernel reads the carry the state passing stored instead: the two carries must be the same bits), both orderings
    tested: the side stream is held busy (a missing join would let the scan read q~ / k~ before they are written)
    and so is the current one (a missing fork wait would let the carry kernel read the angle sums before the
    chunk-state kernel writes them); a forward on other inputs of the same shape runs in between, so that stale
    buffers do not hold the right values. One panel of the visible sizes and one of 80 chunks in a sequence."""
    for seqlens in ([900, 1, 64, 333], [5120, 700]):
        args = make_inputs(seqlens, seed=21, device=DEVICE)
        other = make_inputs(seqlens, seed=22, device=DEVICE)
        inputs = [args[n] for n in INPUT_NAMES]
        cu = args["cu_seqlens"].tolist()  # chunk slots that hold a chunk (the others are never written)
        used = [cu[s] // CHUNK + s + c for s in range(len(cu) - 1) for c in range(-(-(cu[s + 1] - cu[s]) // CHUNK))]
        want = mamba3_siso_fwd(*inputs)
        side = torch.cuda.Stream()
        for busy_stream in (side, torch.cuda.current_stream()):
            mamba3_siso_fwd(*[other[n] for n in INPUT_NAMES])
            with torch.cuda.stream(busy_stream):
                busy = torch.randn(4096, 4096, device=DEVICE)
                for _ in range(3):
                    busy = busy @ busy / 64
            got = mamba3_siso_fwd(*inputs, rotate_stream=side)
            assert all(torch.equal(g, w) for g, w in zip(got[:5], want[:5]))
            for name, g, w in zip(got[5]._fields, got[5], want[5]):
                if name in ("chunk_states", "chunk_scalars", "masked_scores"):  # (slot-indexed: only these written)
                    g, w = g[used], w[used]
                assert torch.equal(g, w), name


def test_stream_priorities_are_in_the_key_and_keep_the_bits(monkeypatch):
    """STREAM_PRIORITIES: a graph's side streams have the configured priorities (as CUDA clamps them), another
    setting is another graph, and the results are the direct call's bits at either setting."""
    graph_module.clear_graphs()
    args = make_inputs([300, 77], seed=31, device=DEVICE)
    want = mamba3_siso_varlen_joint_states_full_vjp(**args, graph=False)
    settings = ((0, 0, 0), graph_module.STREAM_PRIORITIES)
    assert settings[0] != settings[1]
    for priorities in settings:
        monkeypatch.setattr(graph_module, "STREAM_PRIORITIES", priorities)
        for _ in range(2):  # capture, then replay
            _assert_bits(mamba3_siso_varlen_joint_states_full_vjp(**args, graph=True), want)
    graphs = list(graph_module._GRAPHS.values())
    assert len(graphs) == 2
    for g, priorities in zip(graphs, settings):
        assert g.priorities == priorities
        assert [s.priority for s in g._side] == [torch.cuda.Stream(priority=p).priority for p in priorities[1:]]


def test_programmatic_dependent_launches_keep_the_bits():
    """Mamba3BwdConfig.finish_pdl, side_pdl and intra_pdl (the defaults): the finish kernel starts beside the dPhi
    carry kernel and its angle programs wait for the carry; the side kernel starts beside the intra kernel and its
    programs wait before reading the intra kernel's results; the intra kernel likewise after the forward's chunk scan
    (a graph's: directly the state-gradient chain comes between them). Direct calls and graph replays, back to back
    on three rotating input sets (so a result read before its kernel wrote it would be another set's, or
    unwritten), give the bits of the plain launches (all three False)."""
    graph_module.clear_graphs()
    sets = [make_inputs([300, 77, 515], seed=40 + s, device=DEVICE) for s in range(3)]
    plain = Mamba3BwdConfig(finish_pdl=False, side_pdl=False, intra_pdl=False)
    want = [mamba3_siso_varlen_joint_states_full_vjp(**a, graph=False, bwd_config=plain) for a in sets]
    for graph in (False, True):
        got = [mamba3_siso_varlen_joint_states_full_vjp(**sets[i % 3], graph=graph) for i in range(7)]
        for i, g in enumerate(got):
            _assert_bits(g, want[i % 3])
