"""The full-VJP call through its captured graph (ssmkit.mamba3.graph), under the interpreter's stand-in for a CUDA
graph (a replay runs the captured body again): the posted arguments reach the kernels, every result element comes
back to new tensors, later calls follow new inputs, keys, eviction and unaligned inputs.

The plumbing tests swap the kernels for a cheap deterministic stand-in that reads every element of every argument
and writes every element of every result (the interpreter needs ~40 s per real kernel call even at T = 3); the
real kernels through the graph are compared with the direct call in test_kernels_op.py.
"""
import ctypes
import os

import pytest
import torch

from ssmkit.mamba3 import graph as graph_module
from ssmkit.mamba3 import mamba3_siso_varlen_joint_states_full_vjp
from ssmkit.mamba3.inputs import make_inputs
from ssmkit.mamba3.shapes import COTANGENT_NAMES, INPUT_NAMES

pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1",
                                reason="interpreter tests on CPU tensors (TRITON_INTERPRET=1)")
NAMES = INPUT_NAMES + COTANGENT_NAMES


def _at_posted(posted, name, like):
    """The CPU tensor shaped like ``like`` at the address the stash holds for ``name`` (what a kernel given the
    Posted reads or writes there)."""
    address = int(posted.stash[posted.words[name]])
    raw = (ctypes.c_byte * (like.numel() * like.element_size())).from_address(address)
    return torch.frombuffer(raw, dtype=like.dtype).view(like.shape)


def _stand_in_kernels(args, results, fwd_config, bwd_config, side, posted=None, copy_in=None, after_forward=None):
    """results[j] = h_j + position, h_j a sum of every element of every argument weighted by argument and position:
    a missed or misplaced argument word changes every result, a missed result word stays poisoned. ``copy_in`` (the
    graph's slot copy of the small arguments) runs first. With a Posted, its tensors are read and written at their
    posted addresses, as the kernels do; ``after_forward`` (the graph's copy-out of the static results) runs once
    every result is written."""
    if copy_in is not None:
        copy_in()
    if posted is not None:
        args, results = list(args), list(results)
        for name, i in graph_module._POSTED_ARGS.items():
            args[i] = _at_posted(posted, name, args[i])
        for name, j in graph_module._POSTED_RESULTS.items():
            results[j] = _at_posted(posted, name, results[j])
    h = sum((i + 1) * (x.double().flatten() * torch.arange(1, x.numel() + 1, dtype=torch.float64)).sum()
            for i, x in enumerate(args))
    for j, r in enumerate(results):
        pos = torch.arange(r.numel(), dtype=torch.float64).reshape(r.shape)
        r.copy_(((h * (j + 1)) % 97 + pos % 251).to(r.dtype))
    if after_forward is not None:
        after_forward()


def _expected(args):
    results = graph_module._allocate_results(args)
    _stand_in_kernels(args, results, None, None, None)
    return results


@pytest.fixture
def stand_in(monkeypatch):
    monkeypatch.setattr(graph_module, "_launch_into", _stand_in_kernels)
    monkeypatch.setattr(graph_module, "_CAPTURES", [0])
    graph_module.clear_graphs()
    yield
    graph_module.clear_graphs()


def _call(args, **kw):
    return mamba3_siso_varlen_joint_states_full_vjp(**args, graph=True, **kw)


def _assert_equal(got, want):
    assert len(got) == len(want) == 16
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype and torch.equal(g, w)


def test_graph_calls_follow_each_calls_arguments(stand_in):
    """First call (eager body, then capture) and two replays on new inputs: right results, new tensors each call
    (none aliases the graph's static results or an earlier call's), inputs unchanged, one graph for the key."""
    seen, kept = [], []
    for seed in (1, 2, 3):
        args = make_inputs([70, 3, 1], seed=seed)
        before = {n: x.clone() for n, x in args.items()}
        results = _call(args)
        _assert_equal(results, _expected(tuple(args[n] for n in NAMES)))
        assert all(torch.equal(args[n], before[n]) for n in NAMES)
        seen.extend(r.data_ptr() for r in results)
        kept.append(results)  # (alive, so that no address can be reused by a later call)
    (graph,) = graph_module._GRAPHS.values()
    assert graph.io.seq == int(graph.io.ack[0]) == 3
    assert len(set(seen)) == len(seen)
    assert not set(seen) & {r.data_ptr() for r in graph.static_results}


def test_keys_and_least_recently_used_eviction(stand_in, monkeypatch):
    """One graph per (T, S, device, configs); beyond MAX_GRAPHS the least recently used is dropped."""
    monkeypatch.setattr(graph_module, "MAX_GRAPHS", 2)
    a, b, c = make_inputs([5, 2], seed=4), make_inputs([6, 2], seed=5), make_inputs([4, 2, 1], seed=6)
    for args in (a, b, a, c):  # c: same T as a, S differs; it evicts b (a was used more recently)
        _assert_equal(_call(args), _expected(tuple(args[n] for n in NAMES)))
    assert [(k[0], k[1]) for k in graph_module._GRAPHS] == [(7, 2), (7, 3)]


def test_the_graphs_kept_are_bounded_by_their_call_size(stand_in, monkeypatch):
    """Beyond GRAPHS_MAX_CALL_BYTES (the call sizes of the graphs kept, together) the least recently used graphs are
    dropped, down to the newest alone if it must be."""
    sizes = {n: graph_module.call_bytes(n, 1) for n in (3, 4, 9)}
    monkeypatch.setattr(graph_module, "GRAPHS_MAX_CALL_BYTES", sizes[3] + sizes[4])
    for seqlens in ([3], [4], [3], [9]):  # 3 and 4 fit together; 9 alone is over the bound and stays, alone
        args = make_inputs(seqlens, seed=sum(seqlens))
        _assert_equal(_call(args), _expected(tuple(args[n] for n in NAMES)))
        if seqlens == [4]:
            assert [k[0] for k in graph_module._GRAPHS] == [3, 4]
    assert [k[0] for k in graph_module._GRAPHS] == [9]


def test_non_contiguous_and_unaligned_arguments(stand_in):
    """A transposed and a 2-byte-offset bf16 argument are copied to aligned contiguous tensors first."""
    args = make_inputs([9, 4], seed=7)
    v = args["v"]
    wide = torch.empty(v.numel() + 1, dtype=v.dtype)
    args["v"] = wide[1:].view(v.shape)
    args["v"].copy_(v)
    assert args["v"].data_ptr() % 4 == 2
    args["z"] = args["z"].transpose(1, 2).contiguous().transpose(1, 2)
    assert not args["z"].is_contiguous()
    _assert_equal(_call(args), _expected(tuple(args[n].contiguous() for n in NAMES)))


def test_graph_false_launches_directly(stand_in):
    args = make_inputs([3], seed=8)
    mamba3_siso_varlen_joint_states_full_vjp(**args, graph=False)  # the real kernels, no graph made
    assert not graph_module._GRAPHS


def test_when_the_entry_takes_the_graph(monkeypatch):
    """graph=True / False as forced; None: CUDA tensors while a call's size is at most GRAPH_MAX_CALL_BYTES
    (GRAPH_MAX_TOKENS tokens in 4 sequences; many sequences count too), not while the caller captures (graph=True then
    raises)."""
    cpu, cu = torch.empty(5, 1, 128), torch.empty(3, dtype=torch.int32)
    assert graph_module.graph_applies(True, cpu, cu) and not graph_module.graph_applies(False, cpu, cu)
    assert not graph_module.graph_applies(None, cpu, cu)

    class CudaLike:  # what graph_applies reads of a CUDA tensor
        is_cuda = True

        def __init__(self, *shape):
            self.shape = shape

    tokens = graph_module.GRAPH_MAX_TOKENS
    q, cu4 = CudaLike(tokens, 1, 128), CudaLike(5)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)  # (a CPU build's raises)
    assert graph_module.graph_applies(None, q, cu4)
    assert not graph_module.graph_applies(None, CudaLike(tokens + 1, 1, 128), cu4)
    assert graph_module.graph_applies(None, CudaLike(tokens // 2, 1, 128), CudaLike(101))  # 100 sequences
    assert not graph_module.graph_applies(None, CudaLike(tokens // 2, 1, 128), CudaLike(1001))  # 1000
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    assert not graph_module.graph_applies(None, CudaLike(1, 1, 128), CudaLike(2))
    with pytest.raises(ValueError, match="capturing"):
        graph_module.graph_applies(True, q, cu4)


def test_a_key_is_captured_on_its_second_call_and_captures_are_bounded(stand_in, monkeypatch):
    """Unforced, a key's first call returns None (the entry launches directly), its second captures; once
    MAX_CAPTURES graphs were captured new keys are never captured."""
    monkeypatch.setattr(graph_module, "MAX_CAPTURES", 2)
    calls = {}
    for seqlens in ([4, 2], [4, 2], [4, 2], [5, 2], [5, 2], [6, 2], [6, 2]):
        args = make_inputs(seqlens, seed=len(calls))
        flat = tuple(args[n] for n in NAMES)
        got = graph_module.full_vjp_graphed(flat, None, None)
        calls.setdefault(sum(seqlens), []).append(got is not None)
        if got is not None:
            _assert_equal(got, _expected(flat))
    assert calls == {6: [False, True, True], 7: [False, True], 8: [False, False]}
    assert [k[0] for k in graph_module._GRAPHS] == [6, 7]


def test_a_first_call_that_raises_leaves_no_graph(stand_in, monkeypatch):
    """The capture call failing (out of memory, say) leaves nothing behind: the next call starts afresh."""
    def fail_once(*a):
        monkeypatch.setattr(graph_module, "_launch_into", _stand_in_kernels)
        raise RuntimeError("out of memory")

    monkeypatch.setattr(graph_module, "_launch_into", fail_once)
    args = make_inputs([3, 2], seed=9)
    with pytest.raises(RuntimeError, match="out of memory"):
        _call(args)
    assert not graph_module._GRAPHS
    _assert_equal(_call(args), _expected(tuple(args[n] for n in NAMES)))
    _assert_equal(_call(args), _expected(tuple(args[n] for n in NAMES)))  # a replay


def _fast(args, **kw):
    """The entry with the cu_seqlens value check off (the CUDA default), where ``replay_recent`` may serve it."""
    return mamba3_siso_varlen_joint_states_full_vjp(**args, graph=True, check_cu_seqlens=False, **kw)


@pytest.fixture
def counted_checks(monkeypatch):
    """Counts of the entry's checks (``_validate``) and of the fast path's replays."""
    from ssmkit.mamba3 import op

    counts = {"validate": 0, "fast": 0}
    real_validate, real_recent = op._validate, op.replay_recent

    def validate(*a):
        counts["validate"] += 1
        return real_validate(*a)

    def recent(*a):
        got = real_recent(*a)
        counts["fast"] += got is not None
        return got

    monkeypatch.setattr(op, "_validate", validate)
    monkeypatch.setattr(op, "replay_recent", recent)
    return counts


def test_the_recent_graphs_layout_replays_without_the_checks(stand_in, counted_checks):
    """Once a graph exists, calls with its layout (new tensors, new values) replay it without the entry's checks
    and get the right results in new tensors; the graph is the most recently used one."""
    kept = []
    for seed in (11, 12, 13):
        args = make_inputs([5, 3, 1], seed=seed)
        results = _fast(args)
        _assert_equal(results, _expected(tuple(args[n] for n in NAMES)))
        kept.append(results)
    assert counted_checks == {"validate": 1, "fast": 2}
    (graph,) = graph_module._GRAPHS.values()
    assert graph.io.seq == int(graph.io.ack[0]) == 3
    ptrs = [r.data_ptr() for results in kept for r in results]
    assert len(set(ptrs)) == len(ptrs)


@pytest.mark.parametrize("change", ["dtype", "shape", "contiguity", "alignment", "type", "device"])
def test_a_call_off_the_recent_layout_takes_the_checks(stand_in, counted_checks, change):
    """Each way an argument can leave the graph's layout sends the call through the entry's checks: a wrong dtype
    or shape raises their error, a transposed or unaligned tensor is copied first, a Parameter where the graph
    saw a plain tensor (or another device) is checked again; the results stay right."""
    args = make_inputs([6, 2], seed=14)
    _fast(args)
    args = make_inputs([6, 2], seed=15)
    if change == "dtype":
        args["dt"] = args["dt"].double()
        with pytest.raises(TypeError, match="dt must have dtype torch.float32"):
            _fast(args)
    elif change == "shape":
        args["dfinal_k"] = args["dfinal_k"][:, :-1]
        with pytest.raises(ValueError, match="dfinal_k"):
            _fast(args)
    else:
        if change == "contiguity":
            args["v"] = args["v"].transpose(1, 2).contiguous().transpose(1, 2)
        elif change == "alignment":
            wide = torch.empty(args["z"].numel() + 1, dtype=args["z"].dtype)
            args["z"] = wide[1:].view(args["z"].shape).copy_(args["z"])
        elif change == "type":
            args["q_bias"] = torch.nn.Parameter(args["q_bias"], requires_grad=False)
        else:
            (graph,) = graph_module._GRAPHS.values()
            graph.device = torch.device("meta")  # (as if the graph were on another device than the call)
        _assert_equal(_fast(args), _expected(tuple(args[n].contiguous() for n in NAMES)))
        if change == "device":
            graph.device = torch.device("cpu")
    assert counted_checks["validate"] == 2 and counted_checks["fast"] == 0


@pytest.mark.parametrize("case", ["graph_false_like", "no_kernels", "graph_applies_says_no"])
def test_the_fast_path_defers_to_the_entrys_dispatch(stand_in, counted_checks, monkeypatch, case):
    """A falsy ``graph`` other than False (as ``graph_applies`` reads it), the kernels not applying on the graph's
    device (TRITON_INTERPRET unset: the entry runs the eager reference) and ``graph_applies`` declining (a capture
    under way, a call above GRAPH_MAX_CALL_BYTES) each leave the call to the entry's checks and dispatch."""
    args = make_inputs([5, 2], seed=19)
    _fast(args)
    kw = {}
    if case == "graph_false_like":
        kw["graph"] = 0
    elif case == "no_kernels":
        monkeypatch.delenv("TRITON_INTERPRET")
    else:
        monkeypatch.setattr(graph_module, "graph_applies", lambda *a: False)
    mamba3_siso_varlen_joint_states_full_vjp(**args, **{"graph": True, "check_cu_seqlens": False, **kw})
    assert counted_checks == {"validate": 2, "fast": 0}


def test_the_fast_path_only_where_the_entry_would_take_that_graph(stand_in, counted_checks, monkeypatch):
    """No fast replay for graph=False, for graph=None off CUDA, for a value check asked for (bad cu_seqlens values
    then raise though the layout matches), for other configs or stream settings, after clear_graphs; another key's
    graph becomes the recent one."""
    from ssmkit.kernels.mamba3.bwd import DEFAULT_BWD_CONFIG
    from ssmkit.kernels.mamba3.fwd import DEFAULT_FWD_CONFIG

    args = make_inputs([4, 3], seed=16)
    _fast(args)
    mamba3_siso_varlen_joint_states_full_vjp(**args, graph=False, check_cu_seqlens=False)  # direct launch
    flat = tuple(args[n] for n in NAMES)
    assert graph_module.replay_recent(flat, DEFAULT_FWD_CONFIG, DEFAULT_BWD_CONFIG, None) is None  # (CPU)
    assert graph_module.replay_recent(flat, DEFAULT_FWD_CONFIG, DEFAULT_BWD_CONFIG, False) is None
    bad = dict(args, cu_seqlens=torch.tensor([0, 4, 6], dtype=torch.int32))  # right shape, wrong end
    with pytest.raises(ValueError, match="must end at T = 7"):
        mamba3_siso_varlen_joint_states_full_vjp(**bad, graph=True, check_cu_seqlens=True)
    assert counted_checks["fast"] == 0
    _fast(args, bwd_config=DEFAULT_BWD_CONFIG._replace(reduce_tokens=8))  # another key: captured, now the recent
    assert len(graph_module._GRAPHS) == 2 and graph_module._recent().settings[1].reduce_tokens == 8
    monkeypatch.setattr(graph_module, "STREAM_PRIORITIES", (0, 0, 0))
    _fast(args, bwd_config=DEFAULT_BWD_CONFIG._replace(reduce_tokens=8))  # other priorities: another key
    assert len(graph_module._GRAPHS) == 3 and counted_checks["fast"] == 0
    _fast(args, bwd_config=DEFAULT_BWD_CONFIG._replace(reduce_tokens=8))
    assert counted_checks["fast"] == 1
    graph_module.clear_graphs()
    assert graph_module._recent() is None
    _assert_equal(_fast(args), _expected(tuple(args[n] for n in NAMES)))
    assert counted_checks["fast"] == 1


def test_eviction_keeps_the_recent_graph_the_last_one(stand_in, monkeypatch):
    """Beyond MAX_GRAPHS the least recently used graph goes; the recent graph (the fast path's) is the one the last
    call used, whichever path it took (a dropped graph is never replayed by the fast path)."""
    monkeypatch.setattr(graph_module, "MAX_GRAPHS", 1)
    a, b = make_inputs([5, 2], seed=17), make_inputs([6, 2], seed=18)
    for args in (a, b, a):
        _assert_equal(_fast(args), _expected(tuple(args[n] for n in NAMES)))
        assert graph_module._recent().static_args[0].shape[0] == args["q"].shape[0]
    assert [k[0] for k in graph_module._GRAPHS] == [7]
    monkeypatch.setattr(graph_module, "MAX_GRAPHS", 2)
    c = make_inputs([6, 3], seed=20)
    for args in (c, a, c, a):  # the normal path's replays of another key make that graph the recent one
        _fast(args)
        assert graph_module._recent().static_args[0].shape[0] == args["q"].shape[0]
