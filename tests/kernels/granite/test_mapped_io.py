"""MappedIO (kernels/granite/mapped_io.py) under the interpreter: the copies follow the posted addresses, write
every element, stash and acknowledge the sequence number, and a post before the previous replay ran raises."""
import pytest
import torch

from ssmkit.kernels.granite.mapped_io import MappedIO

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_copies_follow_posted_addresses_and_ack(dtype):
    g = torch.Generator().manual_seed(3)
    io = MappedIO(DEVICE)
    static_in = torch.full((3, 1, 1100), float("nan"), dtype=dtype, device=DEVICE)  # > one block, ragged tail
    static_out = torch.randn(3, 1, 1100, generator=g).to(DEVICE, dtype)
    for step in range(1, 4):
        src = torch.randn(3, 1, 1100, generator=g).to(DEVICE, dtype)
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


def test_post_before_the_previous_replay_ran_raises():
    io = MappedIO(DEVICE)
    x = torch.randn(4, device=DEVICE)
    with pytest.raises(ValueError, match="expected 1 destinations"):
        io.post(x, ())
    io.post(x, (torch.empty_like(x),))
    with pytest.raises(RuntimeError, match="has not run its copy-out"):
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
