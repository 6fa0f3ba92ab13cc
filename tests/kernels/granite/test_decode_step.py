"""granite_decode_step (the fused decode kernels) against the same math in float64 (spec §3.1), in the interpreter.

The float64 step below is written independently of the kernel: window concat, conv, SiLU, dt with the model-dtype
roundings of transformers 5.17 (the only rounding the kernel mirrors), exact-decay state update, readout, D skip,
gate before RMSNorm over all channels.
"""
import math

import pytest
import torch
import torch.nn.functional as F

from ssmkit.kernels.granite.decode_linear import granite_decode_linear
from ssmkit.kernels.granite.ssd_decode import granite_decode_step

# Written for the interpreter on CPU tensors (tests/conftest.py); on a CUDA machine Triton compiles for the GPU
# and cannot take CPU pointers, so these are skipped there (the CUDA tests of the layer cover the kernels, and
# test_decode_step_forms_on_cuda runs both forms of the step at the real head shape).
INTERPRETER = pytest.mark.skipif(torch.cuda.is_available(), reason="interpreter tests on CPU tensors")


def _make_inputs(batch, nheads, headdim, dstate, ngroups, dtype, seed, d_conv=4):
    g = torch.Generator().manual_seed(seed)
    inter = nheads * headdim
    conv_dim = inter + 2 * ngroups * dstate

    def rnd(*shape, scale=1.0):
        return torch.randn(*shape, generator=g) * scale

    zxbcdt = rnd(batch, inter + conv_dim + nheads)
    # dt columns: mostly moderate, one head far above softplus's threshold (20) and one far below.
    zxbcdt[:, inter + conv_dim:] *= 3.0
    zxbcdt[0, inter + conv_dim] = 25.0
    zxbcdt[-1, -1] = -12.0
    dt0 = torch.exp(torch.empty(nheads).uniform_(math.log(1e-3), math.log(1e-1), generator=g))
    params = dict(
        conv_weight=rnd(conv_dim, 1, d_conv, scale=0.5).to(dtype),
        conv_bias=rnd(conv_dim, scale=0.2).to(dtype),
        dt_bias=(dt0 + torch.log(-torch.expm1(-dt0))).to(dtype),
        A_log=torch.log(torch.empty(nheads).uniform_(1.0, 16.0, generator=g)).to(dtype),
        D=(1.0 + 0.1 * rnd(nheads)).to(dtype),
        norm_weight=(1.0 + 0.1 * rnd(inter)).to(dtype),
    )
    conv_state = rnd(batch, conv_dim, d_conv).to(dtype)
    ssm_state = rnd(batch, nheads, headdim, dstate)
    return zxbcdt.to(dtype), conv_state, ssm_state, params


def _step_float64(zxbcdt, conv_state, ssm_state, p, eps, ngroups):
    """Returns (out, new_conv_state, new_ssm_state); out and state in float64, conv_state in the model dtype."""
    batch, nheads, headdim, dstate = ssm_state.shape
    inter = nheads * headdim
    conv_dim = conv_state.shape[1]
    dtype = zxbcdt.dtype
    z, xbc, dt_raw = torch.split(zxbcdt, [inter, conv_dim, nheads], dim=-1)
    window = torch.cat([conv_state[:, :, 1:], xbc[:, :, None]], dim=-1)
    w = p["conv_weight"].double().reshape(conv_dim, -1)
    pre = (window.double() * w).sum(-1) + p["conv_bias"].double()
    act = pre * torch.sigmoid(pre)
    x = act[:, :inter].reshape(batch, nheads, headdim)
    heads_per_group = nheads // ngroups
    bmat = act[:, inter:inter + ngroups * dstate].reshape(batch, ngroups, dstate).repeat_interleave(heads_per_group, 1)
    cmat = act[:, inter + ngroups * dstate:].reshape(batch, ngroups, dstate).repeat_interleave(heads_per_group, 1)
    dt = F.softplus((dt_raw.float() + p["dt_bias"].float()).to(dtype).float()).to(dtype).double()
    a = -torch.exp(p["A_log"].double())
    state = (ssm_state.double() * torch.exp(dt * a)[:, :, None, None]
             + (dt[:, :, None] * x)[..., None] * bmat[:, :, None, :])
    y = (state * cmat[:, :, None, :]).sum(-1) + p["D"].double()[None, :, None] * x
    zd = z.double()
    t = y.reshape(batch, inter) * zd * torch.sigmoid(zd)
    out = t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps) * p["norm_weight"].double()
    return out, window, state


def _rel(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


# (batch, nheads, headdim, dstate, ngroups): the tiny config, the real head shape (P 64, N 128) on a few heads,
# and two groups.
SHAPES = [(3, 8, 16, 16, 1), (2, 4, 64, 128, 1), (2, 4, 16, 16, 2)]


@INTERPRETER
@pytest.mark.parametrize("conv_apart", [False, True], ids=["fused_conv", "conv_apart"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "b{}_h{}_p{}_n{}_g{}".format(*s))
def test_decode_step_matches_float64_math(shape, dtype, conv_apart, monkeypatch):
    """Both forms (conv in the state kernel, or in a kernel of its own with its fp32 scratch NaN-poisoned through
    torch.empty) against the float64 step; the form asked for is the one that runs (its (b, conv_dim) scratch is
    allocated exactly when the conv is apart: both forms give the same bits in the interpreter)."""
    real_empty = torch.empty
    shapes = []

    def poisoned_empty(*a, **kw):
        t = real_empty(*a, **kw).fill_(float("nan"))
        shapes.append(tuple(t.shape))
        return t

    monkeypatch.setattr(torch, "empty", poisoned_empty)
    batch, nheads, headdim, dstate, ngroups = shape
    zxbcdt, conv_state, ssm_state, p = _make_inputs(batch, nheads, headdim, dstate, ngroups, dtype, seed=sum(shape))
    eps = 1e-5
    ref_out, ref_conv, ref_state = _step_float64(zxbcdt, conv_state, ssm_state, p, eps, ngroups)
    out = torch.full((batch, nheads * headdim), float("nan"), dtype=dtype)
    gated = torch.full((batch, nheads * headdim), float("nan"))
    res = granite_decode_step(zxbcdt, conv_state, ssm_state, p["conv_weight"], p["conv_bias"], p["dt_bias"],
                              p["A_log"], p["D"], p["norm_weight"], eps, out=out, gated=gated, conv_apart=conv_apart)
    assert res is out
    assert ((batch, conv_state.shape[1]) in shapes) == conv_apart
    assert torch.isfinite(out).all() and torch.isfinite(gated).all(), "decode left outputs unwritten"
    # The conv window is a copy of model-dtype values: exact.
    assert torch.equal(conv_state, ref_conv)
    # fp32 arithmetic on an fp32 state: far under 1e-5 relative.
    assert _rel(ssm_state, ref_state) < 1e-6
    # out is rounded once to the model dtype (bf16: relative rounding <= 2^-9 per element).
    if dtype == torch.bfloat16:
        assert ((out.double() - ref_out).abs() <= 2.0 ** -8 * ref_out.abs() + 1e-6).all()
        assert _rel(out, ref_out) < 3e-3
    else:
        assert _rel(out, ref_out) < 1e-6


@INTERPRETER
@pytest.mark.parametrize("conv_apart", [False, True], ids=["fused_conv", "conv_apart"])
def test_decode_steps_chain_like_float64_recurrence(conv_apart):
    """Four consecutive steps on the same caches track a float64 recurrence fed the same tokens."""
    batch, nheads, headdim, dstate, ngroups = 2, 8, 16, 16, 1
    zxbcdt, conv_state, ssm_state, p = _make_inputs(batch, nheads, headdim, dstate, ngroups, torch.bfloat16, seed=11)
    ref_conv, ref_state = conv_state.clone(), ssm_state.double()
    g = torch.Generator().manual_seed(12)
    for _ in range(4):
        tok = torch.randn(zxbcdt.shape, generator=g).to(torch.bfloat16)
        ref_out, ref_conv, ref_state = _step_float64(tok, ref_conv, ref_state, p, 1e-5, ngroups)
        out = granite_decode_step(tok, conv_state, ssm_state, p["conv_weight"], p["conv_bias"], p["dt_bias"],
                                  p["A_log"], p["D"], p["norm_weight"], 1e-5, conv_apart=conv_apart)
        assert torch.equal(conv_state, ref_conv)
        assert _rel(ssm_state, ref_state) < 1e-6
        assert _rel(out, ref_out) < 3e-3


@INTERPRETER
def test_decode_step_rejects_bad_inputs():
    zxbcdt, conv_state, ssm_state, p = _make_inputs(1, 8, 16, 16, 1, torch.bfloat16, seed=3)
    args = (p["conv_weight"], p["conv_bias"], p["dt_bias"], p["A_log"], p["D"], p["norm_weight"], 1e-5)
    with pytest.raises(TypeError, match="ssm_state must be contiguous float32"):
        granite_decode_step(zxbcdt, conv_state, ssm_state.to(torch.bfloat16), *args)
    with pytest.raises(ValueError, match="zxbcdt must have"):
        granite_decode_step(zxbcdt[:, :-1], conv_state, ssm_state, *args)
    with pytest.raises(ValueError, match="ssm_state must be"):
        granite_decode_step(zxbcdt, conv_state, ssm_state[0], *args)
    with pytest.raises(ValueError, match="conv_apart must be"):
        granite_decode_step(zxbcdt, conv_state, ssm_state, *args, conv_apart="yes")


@INTERPRETER
def test_decode_step_result_independent_of_tile_rows_and_warps():
    """Rows of the state tile are independent: every (block_p, num_warps), and the conv apart, give bit-identical
    results in the interpreter (on the GPU the readout's reduction order follows the warp layout:
    ``decode_launch_config``)."""
    zxbcdt, conv_state, ssm_state, p = _make_inputs(2, 2, 64, 16, 1, torch.bfloat16, seed=9)
    args = (p["conv_weight"], p["conv_bias"], p["dt_bias"], p["A_log"], p["D"], p["norm_weight"], 1e-5)
    results = []
    for block_p, warps in ((16, 1), (32, 2), (64, 4)):
        cs, ss = conv_state.clone(), ssm_state.clone()
        out = granite_decode_step(zxbcdt, cs, ss, *args, block_p=block_p, num_warps=warps)
        results.append((out, cs, ss))
    cs, ss = conv_state.clone(), ssm_state.clone()
    results.append((granite_decode_step(zxbcdt, cs, ss, *args, conv_apart=True), cs, ss))
    for out, cs, ss in results[1:]:
        assert torch.equal(out, results[0][0]) and torch.equal(cs, results[0][1]) and torch.equal(ss, results[0][2])
    with pytest.raises(ValueError, match="block_p"):
        granite_decode_step(zxbcdt, conv_state, ssm_state, *args, block_p=128)


@INTERPRETER
def test_decode_linear_writes_a_posted_destination(monkeypatch):
    """posted_out=(stash, word): the GEMV writes the (M, N) result at the address held in the stash word (as a
    mapped decode graph's out_proj does) with the same bits as its own output; the returned placeholder is not
    written (torch.empty NaN-poisoned). More than 8 rows take the split-K kernel, which writes there too."""
    real_empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **kw: real_empty(*a, **kw).fill_(float("nan")))
    g = torch.Generator().manual_seed(71)
    x = torch.randn(2, 96, generator=g).to(torch.bfloat16)
    w = (0.05 * torch.randn(40, 96, generator=g)).to(torch.bfloat16)
    want = granite_decode_linear(x, w)
    dst = torch.full((2, 1, 40), float("nan"), dtype=torch.bfloat16)
    stash = torch.tensor([7, 0, dst.data_ptr()], dtype=torch.int64)
    placeholder = granite_decode_linear(x, w, posted_out=(stash, 2))
    assert torch.equal(dst[:, 0], want) and placeholder.data_ptr() != dst.data_ptr()
    assert placeholder.isnan().all()
    x9 = torch.randn(9, 96, generator=g).to(torch.bfloat16)
    dst9 = torch.full((9, 40), float("nan"), dtype=torch.bfloat16)
    granite_decode_linear(x9, w, posted_out=(torch.tensor([7, 0, dst9.data_ptr()], dtype=torch.int64), 2))
    assert torch.equal(dst9, granite_decode_linear(x9, w))


@INTERPRETER
@pytest.mark.parametrize("m,n,k,kernel,split,block_k", [
    (1, 40, 96, None, 1, 32), (3, 72, 256, None, 1, 256), (8, 21, 1000, None, 1, 256), (9, 20, 64, None, 1, 256),
    (64, 33, 48, None, 1, 256), (1, 40, 96, "splitk", 3, 32), (8, 21, 1000, "splitk", 4, 256),
    (20, 70, 320, "splitk", 5, 64), (3, 40, 96, "splitk", 4, 16)])
def test_decode_linear_matches_float64_matmul(m, n, k, kernel, split, block_k, monkeypatch):
    """Skinny GEMM x W^T (rows <= 64: the GEMV kernel up to 8 rows, the split-K kernel above or when asked, K in 1
    to 5 slices: (96, 3 slices of 32) leaves none empty, (320, 5 of 64) neither, (1000, 4 of 256) the last one
    short, (96 at block_k 16, 4 slices of 2 steps) the last one empty; N, K not multiples of the tiles) vs float64:
    one bf16 rounding of the result, the same bits on a second call, the arrival counters left at zero.
    torch.empty is NaN-poisoned so an unwritten output element fails."""
    real_empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **kw: real_empty(*a, **kw).fill_(float("nan")))
    g = torch.Generator().manual_seed(m * n + k)
    x = torch.randn(m, k, generator=g).to(torch.bfloat16)
    w = (0.05 * torch.randn(n, k, generator=g)).to(torch.bfloat16)
    counters = torch.zeros(8, dtype=torch.int32)
    args = dict(kernel=kernel, split=split, block_k=block_k, counters=counters if split > 1 else None)
    out = granite_decode_linear(x, w, **args)
    ref = x.double() @ w.double().T
    assert out.dtype == torch.bfloat16 and out.shape == (m, n) and torch.isfinite(out).all()
    assert ((out.double() - ref).abs() <= 2.0 ** -8 * ref.abs() + 1e-6 * ref.abs().max()).all()
    assert torch.equal(granite_decode_linear(x, w, **args), out) and not counters.any()


@INTERPRETER
def test_splitk_linear_reads_and_writes_posted_addresses(monkeypatch):
    """posted_x / posted_out (one stash): the split-K kernel reads x at the address in one stash word (the x
    argument a placeholder of its layout) and writes the result at the other, with the bits of a plain call;
    the returned placeholder is not written."""
    real_empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **kw: real_empty(*a, **kw).fill_(float("nan")))
    g = torch.Generator().manual_seed(72)
    x = torch.randn(3, 128, generator=g).to(torch.bfloat16)
    w = (0.05 * torch.randn(50, 128, generator=g)).to(torch.bfloat16)
    want = granite_decode_linear(x, w, kernel="splitk", split=2, block_k=32)
    dst = torch.full((3, 50), float("nan"), dtype=torch.bfloat16)
    stash = torch.tensor([7, x.data_ptr(), dst.data_ptr()], dtype=torch.int64)
    placeholder_x = torch.zeros_like(x)
    got = granite_decode_linear(placeholder_x, w, kernel="splitk", split=2, block_k=32, posted_x=(stash, 1),
                                posted_out=(stash, 2))
    assert torch.equal(dst, want) and got.isnan().all()


@INTERPRETER
def test_decode_linear_rejects_bad_inputs():
    x, w = torch.randn(2, 32).to(torch.bfloat16), torch.randn(16, 32).to(torch.bfloat16)
    with pytest.raises(TypeError, match="bfloat16"):
        granite_decode_linear(x.float(), w)
    with pytest.raises(ValueError, match="at most 64 rows"):
        granite_decode_linear(torch.randn(65, 32).to(torch.bfloat16), w)
    with pytest.raises(ValueError, match="expected x"):
        granite_decode_linear(x, w[:, :16])
    with pytest.raises(ValueError, match="block_n"):
        granite_decode_linear(x, w, block_n=128)
    with pytest.raises(ValueError, match="block_n"):
        granite_decode_linear(x, w, block_n=6)
    with pytest.raises(ValueError, match="split must be"):
        granite_decode_linear(x, w, kernel="splitk", split=3, block_k=16)  # cdiv(32, 16) = 2 slices at most
    with pytest.raises(ValueError, match="counters"):
        granite_decode_linear(x, w, kernel="splitk", split=2, block_k=16, counters=torch.zeros(1, dtype=torch.int64))
    with pytest.raises(ValueError, match="posted_x"):
        granite_decode_linear(x, w, kernel="gemv", posted_x=(torch.zeros(2, dtype=torch.int64), 1))
    with pytest.raises(ValueError, match="at most 8 rows"):
        granite_decode_linear(torch.randn(9, 32).to(torch.bfloat16), w, kernel="gemv")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the compiled kernels need a GPU")
@pytest.mark.parametrize("batch", [16, 64])
def test_decode_step_forms_on_cuda(batch, monkeypatch):
    """Both forms at the real head shape (48 heads x 64 x 128, one group, bf16) on the GPU, where the conv-apart form
    is the default from 16 rows: three consecutive steps each against the float64 step fed the same caches
    (conv_state exact, the state within fp32 arithmetic, the output one bf16 rounding), the outputs and the scratch
    NaN-poisoned first, the two forms within a few fp32 roundings of each other."""
    real_empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **kw: real_empty(*a, **kw).fill_(float("nan")))
    zxbcdt, conv_state, ssm_state, p_cpu = _make_inputs(batch, 48, 64, 128, 1, torch.bfloat16, seed=batch)
    p = {k: v.cuda() for k, v in p_cpu.items()}
    g = torch.Generator().manual_seed(batch + 1)
    toks = [zxbcdt] + [torch.randn(zxbcdt.shape, generator=g).to(torch.bfloat16) for _ in range(2)]
    states = {}
    for apart in (False, True):
        cs, ss = conv_state.cuda(), ssm_state.cuda()
        ref_conv, ref_state = conv_state.clone(), ssm_state.double()
        for tok in toks:
            ref_out, ref_conv, ref_state = _step_float64(tok, ref_conv, ref_state, p_cpu, 1e-5, 1)
            out = torch.full((batch, 48 * 64), float("nan"), device="cuda", dtype=torch.bfloat16)
            gated = torch.full((batch, 48 * 64), float("nan"), device="cuda")
            granite_decode_step(tok.cuda(), cs, ss, p["conv_weight"], p["conv_bias"], p["dt_bias"], p["A_log"],
                                p["D"], p["norm_weight"], 1e-5, out=out, gated=gated, conv_apart=apart)
            assert torch.isfinite(out).all() and torch.isfinite(gated).all()
            assert torch.equal(cs.cpu(), ref_conv)
            assert _rel(ss.cpu(), ref_state) < 1e-6
            assert ((out.cpu().double() - ref_out).abs() <= 2.0 ** -8 * ref_out.abs() + 1e-6).all()
        states[apart] = ss
    assert _rel(states[True], states[False]) < 1e-6
