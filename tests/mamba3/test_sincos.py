"""The forward's sine and cosine of the rotation angles (``_fwd_sincos``, kernels/mamba3/fwd.py) against float64.

Runs the function in a one-line kernel: in Triton's interpreter on CPU tensors, or compiled on a CUDA device when
there is one (the fused multiply-adds of the reduction are then the GPU's own). The float64 values are of the fp32
input, so the bound is the function's own error: ~2 ulp near 1 for |x| < 6400 (measured 1.1e-7 absolute in a
float32 emulation of the same operations), and half an ulp of x beyond, not the argument's rounding. Outputs are
poisoned (NaN) before the kernel runs.
"""
import math

import pytest
import torch
import triton
import triton.language as tl

from ssmkit.kernels.mamba3.fwd import _fwd_sincos

ABS_TOL = 1.5e-7  # 2.5 ulp of 1.0 in fp32 (float64 sin of fp32 draws rounded to fp32 is off by up to 6e-8)
BLOCK = 1024


@triton.jit
def _sincos_kernel(x_ptr, sin_ptr, cos_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    sin, cos = _fwd_sincos(tl.load(x_ptr + offs, mask=m, other=0.0))
    tl.store(sin_ptr + offs, sin, mask=m)
    tl.store(cos_ptr + offs, cos, mask=m)


def _device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def _sincos_errors(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """|sin - float64 sin| and |cos - float64 cos| of the kernel's results on x, as float64 CPU tensors; every
    element must have been written."""
    sin, cos = torch.full_like(x, math.nan), torch.full_like(x, math.nan)
    _sincos_kernel[(triton.cdiv(x.numel(), BLOCK),)](x, sin, cos, x.numel(), BLOCK=BLOCK)
    assert torch.isfinite(sin).all() and torch.isfinite(cos).all(), "every element written"
    xd = x.double().cpu()
    return (sin.double().cpu() - torch.sin(xd)).abs(), (cos.double().cpu() - torch.cos(xd)).abs()


@pytest.mark.parametrize("lo, hi", [(0.0, 2 * math.pi), (-300.0, 300.0), (-6000.0, 6000.0), (-1e-3, 1e-3)])
def test_sincos_matches_float64(lo, hi):
    gen = torch.Generator().manual_seed(int(hi * 10) % 1000)
    x = (torch.rand(20_000, generator=gen, dtype=torch.float64) * (hi - lo) + lo).float()
    # the quadrant edges, where the reduction picks k and the sign; and exact zero
    edges = torch.tensor([k * math.pi / 4 for k in range(-8, 9)] + [0.0], dtype=torch.float32)
    draws = x.numel()
    sin_err, cos_err = _sincos_errors(torch.cat([x, edges]).to(_device()))
    assert sin_err.max().item() <= ABS_TOL
    assert cos_err.max().item() <= ABS_TOL
    if lo == -1e-3:  # tiny angles, where the absolute bound says nothing about sin: 2 ulp relative
        assert (sin_err[:draws] / torch.sin(x.double()).abs()).max().item() <= 2.0 ** -22


def test_sincos_large_angles_within_half_ulp_of_x():
    """Beyond |x| = 6400 the reduction's products are no longer exact: the error stays near half an ulp of x."""
    gen = torch.Generator().manual_seed(7)
    x = (torch.rand(20_000, generator=gen, dtype=torch.float64) * 9.9e5 + 1e4).float()
    x = torch.cat([x, -x])
    ulp = (torch.nextafter(x.abs(), torch.tensor(math.inf)) - x.abs()).double()
    sin_err, cos_err = _sincos_errors(x.to(_device()))
    assert (sin_err / ulp).max().item() <= 0.6
    assert (cos_err / ulp).max().item() <= 0.6
