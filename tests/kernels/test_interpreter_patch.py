"""The interpreter patch makes bf16 dots and fp32 -> bf16 casts match the GPU's semantics, and range() over run-time
bounds work."""
import os

import pytest
import torch

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402

pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="interpreter only")


@triton.jit
def _dot_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    tl.store(c_ptr + r[:, None] * N + r[None, :], tl.dot(a, b))


@triton.jit
def _cast_kernel(x_ptr, y_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(y_ptr + r, tl.load(x_ptr + r).to(tl.bfloat16))


def test_bf16_dot_multiplies_values_not_bits():
    a = torch.randn(16, 16).bfloat16()
    b = torch.randn(16, 16).bfloat16()
    c = torch.full((16, 16), float("nan"))
    _dot_kernel[(1,)](a, b, c, N=16)
    torch.testing.assert_close(c, a.double().matmul(b.double()).float(), rtol=1e-6, atol=1e-6)


def test_fp32_to_bf16_cast_rounds_to_nearest_even():
    x = torch.randn(256) * 10
    y = torch.zeros(256, dtype=torch.bfloat16)
    _cast_kernel[(1,)](x, y, N=256)
    assert torch.equal(y, x.to(torch.bfloat16))


@triton.jit
def _runtime_range_kernel(n_ptr, out_ptr, BLOCK: tl.constexpr):
    n = tl.load(n_ptr)  # a run-time bound, loaded by the kernel
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, n):
        acc += 1.0
    for j in range(1, n + 1, 2):  # start, stop and step, the stop computed in the kernel
        acc += 10.0
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


@pytest.mark.parametrize("n", [0, 1, 7])
def test_range_over_a_run_time_bound(n):
    """``for i in range(n)`` with n loaded by the kernel runs n times (without the patch the interpreter raises
    under numpy 2: int() of a one-element 1-D array)."""
    out = torch.full((4,), float("nan"))
    _runtime_range_kernel[(1,)](torch.tensor([n], dtype=torch.int32), out, BLOCK=4)
    assert torch.equal(out, torch.full((4,), float(n + 10 * len(range(1, n + 1, 2)))))
