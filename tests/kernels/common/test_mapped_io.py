"""MappedIO (kernels/common/mapped_io.py) under the interpreter: the copies follow the posted addresses, write
every element, stash and acknowledge the sequence number, and a post before the previous replay ran raises."""
import math

import pytest
import torch

from ssmkit.kernels.common.mapped_io import MappedIO, SlotCopy, capture_graph

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.parametrize("width", [1100, 1700])  # 3300 elements: copied by the fetch's program; 5100: own launch
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_copies_follow_posted_addresses_and_ack(dtype, width):
    g = torch.Generator().manual_seed(3)
    io = MappedIO(DEVICE)
    static_in = torch.full((3, 1, width), float("nan"), dtype=dtype, device=DEVICE)  # > one block, ragged tail
    static_out = torch.randn(3, 1, width, generator=g).to(DEVICE, dtype)
    for step in range(1, 4):
        src = torch.randn(3, 1, width, generator=g).to(DEVICE, dtype)
        dst = torch.full_like(src, float("nan"))
        io.post(src, (dst,))
        io.copy_in(static_in)
        assert torch.equal(static_in, src)
        assert io.stash.tolist() == [step, src.data_ptr(), dst.data_ptr()]
        io.copy_out(static_out)
        if DEVICE.type == "cuda":
            torch.cuda.synchronize()
        assert torch.equal(dst, static_out) and int(io.ack[0]) == step == io.seq
        static_out = static_out + 1  # the next replay's output differs


@pytest.mark.parametrize("n", [1536, 6000])
def test_copy_in_can_acknowledge(n):
    """copy_in(ack=True) (graphs whose kernels write their posted outputs themselves): the fetch acknowledges, so
    the next post needs no copy-out; the copy is complete either way (fused into the fetch or its own launch)."""
    io = MappedIO(DEVICE)
    static_in = torch.full((n,), float("nan"), device=DEVICE)
    for step in (1, 2):
        src = torch.randn(n, device=DEVICE)
        dst = torch.empty(1, device=DEVICE)
        io.post(src, (dst,))
        io.copy_in(static_in, ack=True)
        if DEVICE.type == "cuda":
            torch.cuda.synchronize()
        assert torch.equal(static_in, src) and int(io.ack[0]) == step == io.seq
        assert int(io.stash[io.dst_word(0)]) == dst.data_ptr()


def test_post_before_the_previous_replay_ran_raises():
    io = MappedIO(DEVICE)
    x = torch.randn(4, device=DEVICE)
    with pytest.raises(ValueError, match="expected 1 destinations"):
        io.post(x, ())
    io.post(x, (torch.empty_like(x),))
    with pytest.raises(RuntimeError, match="has not acknowledged"):
        io.post(x, (torch.empty_like(x),))


def test_gather_and_several_outputs_with_one_ack():
    """gather_in copies the indexed rows of the posted src; kernels can write through dst_address; only the
    copy-out flagged ack acknowledges; each output lands at its own posted address."""
    g = torch.Generator().manual_seed(4)
    io = MappedIO(DEVICE, n_out=3)
    src = torch.randn(2, 37, 300, generator=g).to(DEVICE, torch.bfloat16)  # rows of 300: not a power of two
    index = torch.randperm(74, generator=g)[:29].to(DEVICE)
    rows = torch.full((29, 300), float("nan"), dtype=torch.bfloat16, device=DEVICE)
    a, b = torch.randn(5, generator=g).to(DEVICE), torch.randn(3, 7, generator=g).to(DEVICE)
    dst_a, dst_b = torch.full_like(a, float("nan")), torch.full_like(b, float("nan"))
    dst_c = torch.empty(1, device=DEVICE)
    io.post(src, (dst_a, dst_b, dst_c))
    io.gather_in(rows, index)
    io.copy_out(a, slot=0, ack=False)
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()
    assert torch.equal(rows, src.reshape(-1, 300)[index]) and torch.equal(dst_a, a)
    assert int(io.ack[0]) == 0 and int(io.dst_address(2)) == dst_c.data_ptr()
    io.copy_out(b, slot=1, ack=True)
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()
    assert torch.equal(dst_b, b) and int(io.ack[0]) == 1


def test_replay_that_raises_leaves_the_table_usable():
    """MappedIO.replay: when the graph's replay raises after the post, the sequence number is set back to what
    the GPU acknowledged, so the next call posts and replays normally."""
    io = MappedIO(DEVICE)
    x, y = torch.randn(8, device=DEVICE), torch.empty(8, device=DEVICE)
    static = torch.empty(8, device=DEVICE)

    class Graph:  # a stand-in replay: the copies a captured graph would run
        fail = True

        def replay(self):
            if self.fail:
                self.fail = False
                raise RuntimeError("replay failed")
            io.copy_in(static)
            io.copy_out(static)

    graph = Graph()
    with pytest.raises(RuntimeError, match="replay failed"):
        io.replay(graph, x, (y,))
    assert io.seq == int(io.ack[0]) == 0
    io.replay(graph, x, (y,))
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()
    assert torch.equal(y, x) and io.seq == int(io.ack[0]) == 1


def _slot_tensors(g, poison: bool):
    """Mixed dtypes and sizes: one over a block (4096 words) with a ragged tail, an odd number of 2-byte elements
    pairs, a single word, int32 and int64."""
    shapes = [((3, 1500), torch.float32), ((5, 7, 2), torch.bfloat16), ((1,), torch.float32), ((3,), torch.int32),
              ((2, 9000), torch.bfloat16), ((4,), torch.int64)]
    out = []
    for shape, dtype in shapes:
        if poison:
            t = torch.full(shape, -7, dtype=dtype) if not dtype.is_floating_point else torch.full(shape, math.nan,
                                                                                                  dtype=dtype)
        elif dtype.is_floating_point:
            t = torch.randn(shape, generator=g).to(dtype)
        else:
            t = torch.randint(-1000, 1000, shape, generator=g, dtype=dtype)
        out.append(t.to(DEVICE))
    return out


def test_slot_copies_move_every_word_of_every_slot():
    """copy_in_slots fills each static tensor from the posted source of its position and copy_out_slots each posted
    destination from its static tensor, every element (poisoned before), in one launch each; the ack comes from the
    copy-out; a second post with other addresses is followed."""
    g = torch.Generator().manual_seed(5)
    static_in, static_out = _slot_tensors(g, poison=True), _slot_tensors(g, poison=False)
    ins, outs = SlotCopy(static_in), SlotCopy(static_out)
    io = MappedIO(DEVICE, n_out=len(static_out), n_in=len(static_in))
    for step in (1, 2):
        srcs = _slot_tensors(g, poison=False)
        dsts = _slot_tensors(g, poison=True)
        io.post(srcs, dsts)
        io.copy_in_slots(ins)
        io.copy_out_slots(outs)
        if DEVICE.type == "cuda":
            torch.cuda.synchronize()
        assert all(torch.equal(a, b) for a, b in zip(static_in, srcs))
        assert all(torch.equal(a, b) for a, b in zip(dsts, static_out))
        assert int(io.ack[0]) == step == io.seq
        assert io.stash.tolist() == [step, *(x.data_ptr() for x in srcs), *(x.data_ptr() for x in dsts)]


def test_slot_copy_rejects_what_it_cannot_move_and_counts_are_checked():
    with pytest.raises(ValueError, match="4-byte aligned"):
        SlotCopy([torch.zeros(5, dtype=torch.bfloat16, device=DEVICE)[1:]])  # 2-byte offset
    with pytest.raises(ValueError, match="whole number of 32-bit words"):
        SlotCopy([torch.zeros(3, dtype=torch.bfloat16, device=DEVICE)])
    with pytest.raises(ValueError, match="contiguous"):
        SlotCopy([torch.zeros(4, 4, device=DEVICE).t()])
    io = MappedIO(DEVICE, n_out=1, n_in=2)
    with pytest.raises(ValueError, match="expected 2 sources"):
        io.post(torch.zeros(1, device=DEVICE), (torch.zeros(1, device=DEVICE),))
    with pytest.raises(ValueError, match=r"positions \(2,\) for 2 sources"):
        io.copy_in_slots(SlotCopy([torch.zeros(1, device=DEVICE)], positions=[2]))
    with pytest.raises(ValueError, match="one non-negative table position per tensor"):
        SlotCopy([torch.zeros(1, device=DEVICE)], positions=[0, 1])


def test_slot_copies_of_some_positions_leave_the_others():
    """A SlotCopy of positions (2, 0) copies sources 2 and 0 into its tensors and leaves source 1's address to
    others; on the way out, destinations 1 and 0 get its tensors and destination 2 is not touched."""
    g = torch.Generator().manual_seed(7)
    srcs = [torch.randn(n, generator=g).to(DEVICE) for n in (5000, 3, 9)]
    dsts = [torch.full((n,), math.nan, device=DEVICE) for n in (7, 5000, 2)]
    io = MappedIO(DEVICE, n_out=3, n_in=3)
    io.post(srcs, dsts)
    static_in = [torch.full((9,), math.nan, device=DEVICE), torch.full((5000,), math.nan, device=DEVICE)]
    io.copy_in_slots(SlotCopy(static_in, positions=[2, 0]), ack=True)
    static_out = [torch.randn(5000, generator=g).to(DEVICE), torch.randn(7, generator=g).to(DEVICE)]
    io.copy_out_slots(SlotCopy(static_out, positions=[1, 0]), ack=False)
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()
    assert torch.equal(static_in[0], srcs[2]) and torch.equal(static_in[1], srcs[0])
    assert torch.equal(dsts[1], static_out[0]) and torch.equal(dsts[0], static_out[1])
    assert torch.isnan(dsts[2]).all()


def test_capture_graph_stand_in_off_cuda():
    """Off CUDA capture_graph runs the warm-up once and returns a stand-in whose replay runs the body."""
    if DEVICE.type == "cuda":
        pytest.skip("the stand-in is for CPU tensors")
    calls = []
    graph, result = capture_graph(lambda: calls.append("warm"), lambda: calls.append("body"), DEVICE)
    assert result is None and calls == ["warm"]
    graph.replay()
    graph.replay()
    assert calls == ["warm", "body", "body"]


def test_fetch_can_acknowledge_the_replay():
    """copy_in_slots(ack=True): the table fetch writes ack (the table is free once it ran); a copy-out with
    ack=False then leaves it."""
    g = torch.Generator().manual_seed(6)
    static = _slot_tensors(g, poison=True)
    io = MappedIO(DEVICE, n_out=len(static), n_in=len(static))
    srcs, dsts = _slot_tensors(g, poison=False), _slot_tensors(g, poison=True)
    io.post(srcs, dsts)
    io.copy_in_slots(SlotCopy(static), ack=True)
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()
    assert int(io.ack[0]) == 1 == io.seq
    io.copy_out_slots(SlotCopy(static), ack=False)
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()
    assert all(torch.equal(a, b) for a, b in zip(dsts, srcs)) and int(io.ack[0]) == 1
