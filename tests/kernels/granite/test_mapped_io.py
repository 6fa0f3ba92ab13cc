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
        io.post(src, dst)
        io.copy_in(static_in)
        assert torch.equal(static_in, src)
        assert io.stash.tolist() == [dst.data_ptr(), step]
        io.copy_out(static_out)
        if DEVICE.type == "cuda":
            torch.cuda.synchronize()
        assert torch.equal(dst, static_out) and int(io.ack[0]) == step == io.seq
        static_out = static_out + 1  # the next replay's output differs


def test_post_before_the_previous_replay_ran_raises():
    io = MappedIO(DEVICE)
    x = torch.randn(4, device=DEVICE)
    io.post(x, torch.empty_like(x))
    with pytest.raises(RuntimeError, match="has not run its copy-out"):
        io.post(x, torch.empty_like(x))
