"""Granite prefill kernels (conv1d + SiLU, chunked SSD, gated RMSNorm) against float64 math written here.

Runs in Triton's CPU interpreter (tests/conftest.py) at tiny shapes: H=3, P=16, N=16, chunk 8, plus one case at the
real P=64, N=128, chunk 256 with few tokens. Every ``torch.empty`` is NaN-poisoned during a test, so a kernel that
leaves an output (or an intermediate it later reads) unwritten fails.

Error bounds come from the rounding model, elementwise: u = 2^-8 is bf16's unit roundoff; a result rounded once to
bf16 is within u|ref|; the SSD with bf16 dot operands rounds each term at most twice (operand, then the bf16
chunk-entering state), so its fp32 y is within 2u * (the same sums over absolute values), and its default bf16 y,
rounded once more, within 3u * those sums.
"""
import pytest
import torch
import torch.nn.functional as F

from ssmkit.kernels.granite import causal_conv1d_silu_prefill, gated_rmsnorm, ssd_chunked_prefill
from ssmkit.kernels.granite.conv1d import packed_layout_rows, unpack_varlen_rows
from ssmkit.kernels.granite.ssd_prefill import PREC_IEEE, ssd_launch_options

U_BF16 = 2.0**-8
FP32_SLACK = 1e-5  # relative room for fp32 sums, exp and cumsum differences

# Written for the interpreter on CPU tensors (tests/conftest.py); on a CUDA machine Triton compiles for the GPU
# and cannot take CPU pointers, so the file is skipped there (the CUDA tests of the layer cover the kernels).
pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="interpreter tests on CPU tensors")


@pytest.fixture(autouse=True)
def poison_empty(monkeypatch):
    """NaN-fill (int: -7) every tensor from torch.empty, so unwritten outputs show up."""
    real_empty = torch.empty

    def poisoned(*args, **kwargs):
        t = real_empty(*args, **kwargs)
        return t.fill_(float("nan") if t.is_floating_point() else -7)

    monkeypatch.setattr(torch, "empty", poisoned)


def _left_pad_mask(lengths, seqlen):
    return torch.stack([torch.arange(seqlen) >= seqlen - n for n in lengths]).to(torch.int64)


# ---------------------------------------------------------------- conv1d


def _conv_inputs(gen, batch, seqlen, conv_dim, extra=(5, 7)):
    """zxbcdt with `extra` columns around the xBC slice, so the kernel must read it in place."""
    d = extra[0] + conv_dim + extra[1]
    zxbcdt = torch.randn(batch, seqlen, d, generator=gen).to(torch.bfloat16)
    weight = (0.5 * torch.randn(conv_dim, 1, 4, generator=gen)).to(torch.bfloat16)
    bias = (0.5 * torch.randn(conv_dim, generator=gen)).to(torch.bfloat16)
    return zxbcdt, weight, bias


def _conv_f64(raw, weight, bias, state=None):
    """silu(bias + sum_k w[:, k] raw[t - 3 + k]) in float64; t < 0 reads state column 4 + t (or 0)."""
    b, seqlen, c = raw.shape
    k = weight.shape[-1]
    prev = state.double()[:, :, 1:].transpose(1, 2) if state is not None else torch.zeros(b, k - 1, c,
                                                                                         dtype=torch.float64)
    seq = torch.cat([prev, raw.double()], dim=1)
    w = weight.double().reshape(c, k)
    acc = bias.double() + sum(w[:, j] * seq[:, j:j + seqlen] for j in range(k))
    return acc * torch.sigmoid(acc)


def _conv_517(raw, weight, bias):
    """The 5.17 fallback numerics: bf16 conv output, SiLU in bf16 (spec §2.1 step 6)."""
    c = raw.shape[-1]
    out = F.conv1d(raw.transpose(1, 2), weight, bias, padding=3, groups=c)[:, :, : raw.shape[1]]
    return F.silu(out).transpose(1, 2)


@pytest.mark.parametrize("seqlen,conv_dim", [(1, 40), (2, 40), (3, 40), (9, 40), (20, 40), (41, 32), (20, 32)])
def test_conv_matches_float64_and_writes_conv_state(seqlen, conv_dim):
    """conv_dim 32 with 16-channel blocks: full blocks, so tiles 1.. of 8 rows (3 rows of history real) take the
    unmasked interior path; 40: every tile the masked one."""
    gen = torch.Generator().manual_seed(100 + seqlen)
    zxbcdt, weight, bias = _conv_inputs(gen, 2, seqlen, conv_dim)
    raw = zxbcdt[:, :, 5:5 + conv_dim]
    state_out = torch.full((2, conv_dim, 4), float("nan"), dtype=torch.bfloat16)
    out = causal_conv1d_silu_prefill(zxbcdt, weight, bias, conv_state_out=state_out, xbc_offset=5,
                                     block_l=8, block_c=16)
    ref = _conv_f64(raw, weight, bias)
    assert out.dtype == torch.bfloat16 and out.shape == (2, seqlen, conv_dim)
    err = (out.double() - ref).abs()
    assert (err <= U_BF16 * ref.abs() + 1e-6).all()
    # no larger than the 5.17 reference's own error against the same math
    err_517 = (_conv_517(raw, weight, bias).double() - ref).abs()
    assert err.norm() <= err_517.norm()
    # conv state = last 4 raw columns, zero-padded on the left when L < 4
    expect = torch.cat([torch.zeros(2, 4, conv_dim, dtype=torch.bfloat16), raw], dim=1)[:, -4:].transpose(1, 2)
    assert torch.equal(state_out, expect)


def test_conv_left_padding_zeroes_pad_positions():
    gen = torch.Generator().manual_seed(7)
    seqlen, conv_dim = 19, 24
    zxbcdt, weight, bias = _conv_inputs(gen, 3, seqlen, conv_dim, extra=(0, 0))
    mask = _left_pad_mask([19, 4, 1], seqlen)
    zxbcdt = zxbcdt * mask[:, :, None].to(zxbcdt.dtype)  # mask #1, as in_proj of a masked input gives
    out = causal_conv1d_silu_prefill(zxbcdt, weight, bias, attention_mask=mask.bool(), block_l=8, block_c=16)
    ref = _conv_f64(zxbcdt, weight, bias) * mask[:, :, None]
    assert (out[mask == 0] == 0).all()  # exactly 0 (mask #2), also in the tiles that hold only padding
    assert ((out.double() - ref).abs() <= U_BF16 * ref.abs() + 1e-6).all()


@pytest.mark.parametrize("new_len", [1, 2, 6, 20])
def test_conv_continuation_matches_full_sequence(new_len):
    gen = torch.Generator().manual_seed(11 + new_len)
    conv_dim, prefix = 32, 5
    zxbcdt, weight, bias = _conv_inputs(gen, 2, prefix + new_len, conv_dim, extra=(0, 0))
    state = torch.full((2, conv_dim, 4), float("nan"), dtype=torch.bfloat16)
    causal_conv1d_silu_prefill(zxbcdt[:, :prefix], weight, bias, conv_state_out=state, block_l=8, block_c=16)
    # in place: the same tensor is read as conv_state_in and written as conv_state_out
    out = causal_conv1d_silu_prefill(zxbcdt[:, prefix:], weight, bias, conv_state_in=state, conv_state_out=state,
                                     block_l=8, block_c=16)
    full = _conv_f64(zxbcdt, weight, bias)[:, prefix:]
    assert ((out.double() - full).abs() <= U_BF16 * full.abs() + 1e-6).all()
    assert torch.equal(state, zxbcdt[:, -4:].transpose(1, 2))


@pytest.mark.parametrize("conv_dim", [32, 40])
def test_conv_interior_path_equals_masked_path(conv_dim):
    """The unmasked interior paths (2-D tiles and the sliding window over rows, the latter with the masked path in
    2-row steps) change no bit: outputs and conv state against the masked path, padded (no mask) and packed
    layouts, prefill and continuation; 16-channel blocks, all full (32) or the last one partial (40: its tiles take
    the masked path, the others stay interior)."""
    gen = torch.Generator().manual_seed(31)
    seqlen, lengths = 41, [41, 30, 9]
    zxbcdt, weight, bias = _conv_inputs(gen, len(lengths), seqlen, conv_dim)
    mask = _left_pad_mask(lengths, seqlen)
    zxbcdt = zxbcdt * mask[:, :, None].to(zxbcdt.dtype)
    state_in = torch.randn(len(lengths), conv_dim, 4, generator=gen).to(torch.bfloat16)
    rows = packed_layout_rows(mask.sum(1), seqlen)
    for layout in ({}, dict(packed_rows=rows, seqlen=seqlen)):
        x = _packed(zxbcdt, mask) if layout else zxbcdt
        for given in (None, state_in):
            results = []
            for interior, by_rows, sub in ((False, False, None), (True, False, None), (True, True, 2)):
                state = torch.full((len(lengths), conv_dim, 4), float("nan"), dtype=torch.bfloat16)
                out = causal_conv1d_silu_prefill(x, weight, bias, conv_state_in=given, conv_state_out=state,
                                                 xbc_offset=5, block_l=8, block_c=16, unmasked_interior=interior,
                                                 interior_rows=by_rows, masked_rows=sub, **layout)
                results.append((out, state))
            for out, state in results[1:]:
                assert torch.equal(out, results[0][0]) and torch.equal(state, results[0][1])


def _unpacked(packed, mask):
    """The packed (T, d) rows of a left-padded batch back in the (b, L, d) layout, 0 at pads."""
    out = torch.zeros(*mask.shape, packed.shape[1], dtype=packed.dtype)
    out[mask.bool()] = packed
    return out


def _packed(padded, mask, margin=2):
    """The real positions of a left-padded (b, L, d) tensor, row after row, as a (T, d) view into a buffer with
    NaN rows before and after it (a kernel reading outside the real rows would show)."""
    real = padded[mask.bool()]
    buf = torch.full((real.shape[0] + 2 * margin, padded.shape[2]), float("nan"), dtype=padded.dtype)
    buf[margin:margin + real.shape[0]] = real
    return buf[margin:margin + real.shape[0]]


def test_ssd_register_caps_only_for_the_unmasked_layouts_on_cuda():
    """The SSD launch options: the register caps (measured faster, padded and packed) on CUDA without a mask only
    (unmeasured with a mask); a kernel named in ``launch`` gets exactly the options given there."""
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    capped = ssd_launch_options(cuda, masked=False)
    assert capped["scan"] == {"maxnreg": 128} and capped["state"] == {"maxnreg": 128, "num_stages": 2}
    assert capped["pass"] == capped["prep"] == capped["fused"] == {}
    for device, masked in ((cuda, True), (cpu, False)):
        assert ssd_launch_options(device, masked) == {"state": {}, "pass": {}, "scan": {}, "prep": {}, "fused": {}}
    given = ssd_launch_options(cuda, False, {"scan": {"num_warps": 8}})
    assert given["scan"] == {"num_warps": 8} and given["state"] == capped["state"]


def test_conv_rejects_masked_rows_not_dividing_the_tile():
    gen = torch.Generator().manual_seed(2)
    zxbcdt, weight, bias = _conv_inputs(gen, 1, 9, 16)
    for rows in (3, 0, 16):
        with pytest.raises(ValueError, match="masked_rows"):
            causal_conv1d_silu_prefill(zxbcdt, weight, bias, xbc_offset=5, block_l=8, masked_rows=rows)


@pytest.mark.parametrize("continuing", [False, True])
@pytest.mark.parametrize("seqlen,conv_dim,lengths", [(19, 24, [19, 4, 1, 0, 3]), (37, 32, [37, 29, 0, 12, 2])])
def test_conv_packed_layout_equals_padded_layout(continuing, seqlen, conv_dim, lengths):
    """Packed varlen layout (real tokens only, rows from packed_layout_rows) == the padded layout with its mask, bit
    for bit: outputs at real positions and the conv state, for an empty row and rows shorter than the window. With
    conv_dim 32 (full 16-channel blocks) the packed rows' interior tiles take the unmasked path, the padded layout
    (with its mask) never does."""
    gen = torch.Generator().manual_seed(12)
    mask = _left_pad_mask(lengths, seqlen)
    zxbcdt, weight, bias = _conv_inputs(gen, len(lengths), seqlen, conv_dim)
    zxbcdt = zxbcdt * mask[:, :, None].to(zxbcdt.dtype)
    state_in = torch.randn(len(lengths), conv_dim, 4, generator=gen).to(torch.bfloat16) if continuing else None
    states = [torch.full((len(lengths), conv_dim, 4), float("nan"), dtype=torch.bfloat16) for _ in range(2)]
    out = causal_conv1d_silu_prefill(zxbcdt, weight, bias, conv_state_in=state_in, attention_mask=mask,
                                     conv_state_out=states[0], xbc_offset=5, block_l=8, block_c=16)
    rows = packed_layout_rows(mask.sum(1), seqlen)
    packed = causal_conv1d_silu_prefill(_packed(zxbcdt, mask), weight, bias, conv_state_in=state_in,
                                        conv_state_out=states[1], xbc_offset=5, packed_rows=rows, seqlen=seqlen,
                                        block_l=8, block_c=16)
    assert packed.shape == (sum(lengths), conv_dim)
    assert torch.equal(packed, out[mask.bool()]) and torch.equal(states[0], states[1])


def test_unpack_varlen_rows_restores_padded_layout_with_zero_pads():
    """unpack_varlen_rows(packed) == the padded tensor with exact zeros at pads (an empty row, a full row, a
    strided packed view inside NaN margins); every output element written (torch.empty is NaN-poisoned)."""
    gen = torch.Generator().manual_seed(14)
    seqlen, lengths = 21, [21, 0, 5, 1, 17]
    mask = _left_pad_mask(lengths, seqlen)
    padded = torch.randn(len(lengths), seqlen, 40, generator=gen).to(torch.bfloat16) * mask[:, :, None]
    packed = _packed(torch.cat([padded, torch.randn_like(padded.float()).to(torch.bfloat16)], -1), mask)[:, :40]
    rows = packed_layout_rows(mask.sum(1), seqlen)
    out = unpack_varlen_rows(packed, rows, seqlen, block_l=8, block_d=16)
    assert out.shape == padded.shape and out.is_contiguous() and torch.equal(out, padded)
    # the same written through an address held in device memory (the mapped graph's output)
    given = torch.full_like(padded, float("nan"))
    address = torch.tensor([given.data_ptr()], dtype=torch.int64)
    assert unpack_varlen_rows(packed, rows, seqlen, out_address=address, block_l=8, block_d=16) is None
    assert torch.equal(given, padded)


# ---------------------------------------------------------------- chunked SSD


def _ssd_inputs(gen, batch, seqlen, nheads, head_dim, d_state, mask=None):
    conv_dim = nheads * head_dim + 2 * d_state
    xbc = torch.randn(batch, seqlen, conv_dim, generator=gen)
    dt_raw = torch.randn(batch, seqlen, nheads, generator=gen)
    if mask is not None:  # pads: xBC = 0 (mask #2), dt_raw = 0 (in_proj of a zeroed input)
        xbc = xbc * mask[:, :, None]
        dt_raw = dt_raw * mask[:, :, None]
    dt_bias = torch.log(torch.expm1(torch.exp(torch.empty(nheads).uniform_(-4.6, -2.3, generator=gen))))
    a_log = torch.log(torch.empty(nheads).uniform_(1.0, 16.0, generator=gen))
    d = 1.0 + 0.1 * torch.randn(nheads, generator=gen)
    bf = torch.bfloat16
    return xbc.to(bf), dt_raw.to(bf), dt_bias.to(bf), a_log.to(bf), d.to(bf)


def _ssd_f64(xbc, dt_raw, dt_bias, a_log, d, nheads, head_dim, d_state, init=None, absolute=False):
    """Token recurrence in float64: S = S exp(A dt) + dt x B^T, y = S C + D x; dt as 5.17 (bf16 add + softplus).

    absolute=True runs it on |x|, |B|, |C|, |D|, |init| (the sums of absolute terms, for error bounds).
    Returns y (b, L, H*P) and the final state (b, H, P, N).
    """
    f = torch.abs if absolute else (lambda t: t)
    b, seqlen, _ = xbc.shape
    hp = nheads * head_dim
    x = f(xbc[..., :hp].double()).view(b, seqlen, nheads, head_dim)
    bm = f(xbc[..., hp:hp + d_state].double())
    cm = f(xbc[..., hp + d_state:].double())
    dt = F.softplus(dt_raw + dt_bias.to(dt_raw.dtype)).double()
    a = -torch.exp(a_log.double())
    s = f(init.double()) if init is not None else torch.zeros(b, nheads, head_dim, d_state, dtype=torch.float64)
    ys = []
    for t in range(seqlen):
        s = s * torch.exp(a * dt[:, t])[:, :, None, None] \
            + dt[:, t, :, None, None] * x[:, t, :, :, None] * bm[:, t, None, None, :]
        ys.append((torch.einsum("bhpn,bn->bhp", s, cm[:, t]) + f(d.double())[:, None] * x[:, t]).reshape(b, hp))
    return torch.stack(ys, 1), s


def _check_ssd(y, final, args, nheads, head_dim, d_state, init=None, rel=3 * U_BF16):
    y_ref, s_ref = _ssd_f64(*args, nheads, head_dim, d_state, init=init)
    y_abs, s_abs = _ssd_f64(*args, nheads, head_dim, d_state, init=init, absolute=True)
    assert not y.isnan().any() and not final.isnan().any()
    assert ((y.double() - y_ref).abs() <= (rel + FP32_SLACK) * y_abs + 1e-6).all()
    assert ((final.double() - s_ref).abs() <= (rel + FP32_SLACK) * s_abs + 1e-6).all()


H, P, N, CH = 3, 16, 16, 8


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("seqlen", [1, 2, 3, CH - 1, CH, CH + 1, 3 * CH + 5])
def test_ssd_matches_float64_recurrence(seqlen, fused):
    """fused: the chunk states and their passing in one sequential kernel (block_n 8: two programs per head)."""
    gen = torch.Generator().manual_seed(seqlen)
    args = _ssd_inputs(gen, 2, seqlen, H, P, N)
    final = torch.full((2, H, P, N), float("nan"))
    y = ssd_chunked_prefill(*args, chunk_size=CH, ssm_state_out=final, fused_state=fused, block_n=8)
    assert y.shape == (2, seqlen, H * P) and y.dtype == torch.bfloat16
    _check_ssd(y, final, args, H, P, N)


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("block_m", [2, 4])
def test_ssd_several_row_blocks_match_float64(block_m, fused):
    """bf16 dots with several row blocks per chunk: the off-diagonal C.B^T blocks take the decay factored through
    the cumsum before the row block (a column factor on the tile, a row factor on the accumulator), the diagonal
    block the causal tile of decays; both must stay within the 3u bound (block_m = chunk has no off-diagonal
    block, so the tests at the default block_m never reach that loop)."""
    gen = torch.Generator().manual_seed(10 + block_m)
    args = _ssd_inputs(gen, 2, 3 * CH + 5, H, P, N)
    final = torch.full((2, H, P, N), float("nan"))
    y = ssd_chunked_prefill(*args, chunk_size=CH, ssm_state_out=final, block_m=block_m, fused_state=fused)
    _check_ssd(y, final, args, H, P, N)


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("block_m", [2, 4])
def test_ssd_strong_decay_stays_finite_and_accurate(block_m, fused):
    """A down to -exp(9) ~ -8100 (cumsums of thousands within a chunk): the off-diagonal decay must be factored
    through the cumsum just before the row block, where both exponents are <= 0; factored through another point
    (the chunk's start, i.e. the unfactored exp(cs_l) exp(-cs_s), or one position off) one factor overflows to inf
    and y turns inf / NaN, which the float64 check rejects (the default-decay tests cannot tell those forms apart:
    every reference point gives the same exact product)."""
    gen = torch.Generator().manual_seed(5)
    args = list(_ssd_inputs(gen, 2, 3 * CH + 5, H, P, N))
    args[3] = torch.tensor([1.0, 5.0, 9.0]).to(torch.bfloat16)  # A_log
    final = torch.full((2, H, P, N), float("nan"))
    y = ssd_chunked_prefill(*args, chunk_size=CH, ssm_state_out=final, block_m=block_m, fused_state=fused)
    _check_ssd(y, final, args, H, P, N)


def test_ssd_fp32_y_is_within_two_roundings():
    gen = torch.Generator().manual_seed(2)
    args = _ssd_inputs(gen, 2, 2 * CH + 5, H, P, N)
    final = torch.full((2, H, P, N), float("nan"))
    y = ssd_chunked_prefill(*args, chunk_size=CH, ssm_state_out=final, y_dtype=torch.float32)
    assert y.dtype == torch.float32
    _check_ssd(y, final, args, H, P, N, rel=2 * U_BF16)


@pytest.mark.parametrize("shared_cb, cb_spread, scan_heads, block_m, fused",
                         [(True, False, 1, 64, False), (True, True, 1, 2, False), (False, False, 3, 4, False),
                          (True, False, 1, 2, True), (False, False, 1, 4, True)])
def test_ssd_fp32_operands_match_float64_tightly(shared_cb, cb_spread, scan_heads, block_m, fused):
    """With fp32 dot operands the only differences left are fp32 rounding: this pins dt's bf16 rounding, the
    decays and the chunk hand-off far below bf16 level. block_m < chunk: several row blocks per chunk (block_m 2:
    10 causal C.B^T blocks spread over 3 heads, so some heads compute several)."""
    gen = torch.Generator().manual_seed(3)
    args = _ssd_inputs(gen, 2, 2 * CH + 3, H, P, N)
    final = torch.full((2, H, P, N), float("nan"))
    y = ssd_chunked_prefill(*args, chunk_size=CH, ssm_state_out=final, precision=PREC_IEEE, shared_cb=shared_cb,
                            cb_spread=cb_spread, scan_heads=scan_heads, block_m=block_m, y_dtype=torch.float32,
                            fused_state=fused, block_n=8)
    _check_ssd(y, final, args, H, P, N, rel=0.0)


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("state_split", [True, False])
def test_ssd_final_state_with_split_operand_is_near_fp32(state_split, fused):
    """Default bf16 dots: the local-state operand x dt exp(..) goes in as two bf16 terms, so the final state is
    within ~u^2 of float64 (plus fp32 slack), while y keeps its 3u bound. Without the split the final state is only
    within the 3u bound, and the tight bound fails somewhere (so this test can fail)."""
    gen = torch.Generator().manual_seed(11)
    args = _ssd_inputs(gen, 2, 3 * CH + 5, H, P, N)
    final = torch.full((2, H, P, N), float("nan"))
    y = ssd_chunked_prefill(*args, chunk_size=CH, ssm_state_out=final, state_split=state_split, fused_state=fused)
    _check_ssd(y, final, args, H, P, N)
    s_ref = _ssd_f64(*args, H, P, N)[1]
    s_abs = _ssd_f64(*args, H, P, N, absolute=True)[1]
    tight = ((final.double() - s_ref).abs() <= (4 * U_BF16**2 + FP32_SLACK) * s_abs + 1e-6).all()
    assert bool(tight) == state_split


def test_ssd_fp32_dt_is_not_rounded_to_bf16():
    """dt_raw in fp32 (a float32 run of the layer): dt + bias and softplus stay fp32, no bf16 rounding."""
    gen = torch.Generator().manual_seed(8)
    xbc, dt_raw, dt_bias, a_log, d = _ssd_inputs(gen, 1, CH + 3, H, P, N)
    args = (xbc, dt_raw.float() + 1e-3 * torch.randn(dt_raw.shape, generator=gen), dt_bias.float(), a_log, d)
    final = torch.full((1, H, P, N), float("nan"))
    y = ssd_chunked_prefill(*args, chunk_size=CH, ssm_state_out=final, precision=PREC_IEEE, y_dtype=torch.float32)
    _check_ssd(y, final, args, H, P, N, rel=0.0)


@pytest.mark.parametrize("fused", [False, True])
def test_ssd_left_padding_skips_pad_chunks_exactly(fused):
    """Masked layout: y and the final state within the float64 bound, pads 0; skipping the pad chunks (the
    chunk-state form) gives the same bits as computing them, and the fused form (which computes them: x = B = 0
    there) the same bits with and without the mask."""
    gen = torch.Generator().manual_seed(5)
    seqlen = 4 * CH + 3
    mask = _left_pad_mask([seqlen, CH + 2, 1], seqlen)
    args = _ssd_inputs(gen, 3, seqlen, H, P, N, mask=mask)
    final = torch.full((3, H, P, N), float("nan"))
    y = ssd_chunked_prefill(*args, chunk_size=CH, ssm_state_out=final, attention_mask=mask, fused_state=fused,
                            block_n=8)
    _check_ssd(y, final, args, H, P, N)
    assert (y[mask == 0] == 0).all()
    # skipping the pad chunks gives the same bits as computing them (their terms are exact zeros)
    final_all = torch.full((3, H, P, N), float("nan"))
    y_all = ssd_chunked_prefill(*args, chunk_size=CH, ssm_state_out=final_all, fused_state=fused, block_n=8)
    assert torch.equal(y, y_all) and torch.equal(final, final_all)


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("continuing", [False, True])
def test_ssd_packed_layout_equals_padded_layout(continuing, fused):
    """Packed varlen layout == the padded layout with its mask, bit for bit (y at real positions, final state),
    for rows crossing chunks, a single token and an empty row; continuing: the initial state decays through the
    pads as in the padded layout (dt_raw = 0 there)."""
    gen = torch.Generator().manual_seed(13)
    seqlen, lengths = 3 * CH + 3, [3 * CH + 3, CH + 2, 1, 0]
    mask = _left_pad_mask(lengths, seqlen)
    xbc, dt_raw, *params = _ssd_inputs(gen, len(lengths), seqlen, H, P, N, mask=mask)
    init = torch.randn(len(lengths), H, P, N, generator=gen) if continuing else None
    finals = [torch.full((len(lengths), H, P, N), float("nan")) for _ in range(2)]
    y = ssd_chunked_prefill(xbc, dt_raw, *params, chunk_size=CH, initial_state=init, ssm_state_out=finals[0],
                            attention_mask=mask, cb_spread=continuing, fused_state=fused)
    packed = ssd_chunked_prefill(_packed(xbc, mask), _packed(dt_raw, mask), *params, chunk_size=CH,
                                 initial_state=init, ssm_state_out=finals[1], cb_spread=continuing,
                                 packed_rows=packed_layout_rows(mask.sum(1), seqlen), seqlen=seqlen,
                                 fused_state=fused)
    assert packed.shape == (sum(lengths), H * P)
    assert torch.equal(packed, y[mask.bool()]) and torch.equal(finals[0], finals[1])


@pytest.mark.parametrize("fused", [False, True])
def test_ssd_packed_edge_rows_match_float64_in_place(fused):
    """Packed layout at L a multiple of the chunk: an empty row (no chunk with a token), a row starting exactly on
    a chunk boundary, one real token, a full row; continuing in place (initial_state is ssm_state_out). y and the
    final state within the float64 bound of the padded inputs (the initial state decays through the pads)."""
    gen = torch.Generator().manual_seed(31)
    seqlen, lengths = 4 * CH, [0, 2 * CH, 1, 4 * CH]
    mask = _left_pad_mask(lengths, seqlen)
    xbc, dt_raw, *params = _ssd_inputs(gen, len(lengths), seqlen, H, P, N, mask=mask)
    init = torch.randn(len(lengths), H, P, N, generator=gen)
    state = init.clone()
    y = ssd_chunked_prefill(_packed(xbc, mask), _packed(dt_raw, mask), *params, chunk_size=CH, initial_state=state,
                            ssm_state_out=state, packed_rows=packed_layout_rows(mask.sum(1), seqlen), seqlen=seqlen,
                            fused_state=fused, block_n=8)
    _check_ssd(_unpacked(y, mask), state, (xbc, dt_raw, *params), H, P, N, init=init)


def test_ssd_real_head_shape_fused_packed():
    """The fused form at the real P = 64, N = 128, chunk 256 with block_n 64 (two programs per head) and 10 causal
    C.B^T blocks a chunk, packed rows across chunks and an empty row, against float64."""
    gen = torch.Generator().manual_seed(37)
    seqlen, lengths = 600, [600, 300, 0]
    mask = _left_pad_mask(lengths, seqlen)
    xbc, dt_raw, *params = _ssd_inputs(gen, 3, seqlen, 2, 64, 128, mask=mask)
    final = torch.full((3, 2, 64, 128), float("nan"))
    y = ssd_chunked_prefill(_packed(xbc, mask), _packed(dt_raw, mask), *params, chunk_size=256, ssm_state_out=final,
                            packed_rows=packed_layout_rows(mask.sum(1), seqlen), seqlen=seqlen, fused_state=True)
    _check_ssd(_unpacked(y, mask), final, (xbc, dt_raw, *params), 2, 64, 128)


@pytest.mark.parametrize("fused", [False, True])
def test_ssd_initial_state_continuation_matches_one_pass(fused):
    gen = torch.Generator().manual_seed(9)
    prefix, seqlen = CH + 3, 2 * CH + 6
    args = _ssd_inputs(gen, 2, seqlen, H, P, N)
    mid = torch.full((2, H, P, N), float("nan"))
    ssd_chunked_prefill(*[a[:, :prefix] if a.dim() == 3 else a for a in args], chunk_size=CH, ssm_state_out=mid,
                        fused_state=fused)
    tail = [a[:, prefix:] if a.dim() == 3 else a for a in args]
    final = torch.full((2, H, P, N), float("nan"))
    y = ssd_chunked_prefill(*tail, chunk_size=CH, initial_state=mid, ssm_state_out=final, fused_state=fused)
    # against the float64 recurrence continued from the kernel's own fp32 state (exact hand-off)
    _check_ssd(y, final, tail, H, P, N, init=mid)
    # in place, as a layer updates its cache: the same tensor is initial_state and ssm_state_out
    state = mid.clone()
    y_inplace = ssd_chunked_prefill(*tail, chunk_size=CH, initial_state=state, ssm_state_out=state,
                                    fused_state=fused)
    assert torch.equal(y_inplace, y) and torch.equal(state, final)


def test_ssd_fused_state_by_default_from_enough_row_head_chains_without_a_mask(monkeypatch):
    """fused_state=None takes the fused form when batch x H reaches FUSED_STATE_MIN_CHAINS (whatever block_n) and
    no attention_mask is given (the other form skips fully padded chunks), the chunk-state and passing kernels
    otherwise; both give y within the float64 bound."""
    from ssmkit.kernels.granite import ssd_prefill

    launched = []

    class Spy:  # records the kernel's name at each launch
        def __init__(self, name):
            self.name, self.kernel = name, getattr(ssd_prefill, name)

        def __getitem__(self, grid):
            launched.append(self.name)
            return self.kernel[grid]

    for name in ("_ssd_state_fused_kernel", "_ssd_state_pass_kernel"):
        monkeypatch.setattr(ssd_prefill, name, Spy(name))
    monkeypatch.setattr(ssd_prefill, "FUSED_STATE_MIN_CHAINS", 2 * H)  # 2 rows
    gen = torch.Generator().manual_seed(23)
    seqlen = 2 * CH + 1
    mask = _left_pad_mask([seqlen, CH], seqlen)
    for batch, attention_mask, block_n, want in ((1, None, 4, "_ssd_state_pass_kernel"),
                                                 (2, None, 16, "_ssd_state_fused_kernel"),
                                                 (2, mask, 8, "_ssd_state_pass_kernel")):
        args = _ssd_inputs(gen, batch, seqlen, H, P, N, mask=attention_mask)
        final = torch.full((batch, H, P, N), float("nan"))
        y = ssd_chunked_prefill(*args, chunk_size=CH, ssm_state_out=final, block_n=block_n,
                                attention_mask=attention_mask)
        assert launched.pop() == want and not launched
        _check_ssd(y, final, args, H, P, N)


def test_ssd_real_head_shape_few_tokens():
    """P = 64, N = 128, chunk 256 (the specialised shape), 2 heads, 5 tokens."""
    gen = torch.Generator().manual_seed(21)
    args = _ssd_inputs(gen, 1, 5, 2, 64, 128)
    final = torch.full((1, 2, 64, 128), float("nan"))
    y = ssd_chunked_prefill(*args, chunk_size=256, ssm_state_out=final)
    _check_ssd(y, final, args, 2, 64, 128)


def test_ssd_rejects_bad_inputs():
    gen = torch.Generator().manual_seed(1)
    xbc, dt_raw, dt_bias, a_log, d = _ssd_inputs(gen, 1, 4, H, P, N)
    with pytest.raises(TypeError, match="bfloat16"):
        ssd_chunked_prefill(xbc.float(), dt_raw, dt_bias, a_log, d, chunk_size=CH, d_state=N)
    with pytest.raises(ValueError, match="d_state"):
        ssd_chunked_prefill(xbc, dt_raw, dt_bias, a_log, d, chunk_size=CH)
    with pytest.raises(ValueError, match="H\\*P \\+ 2N"):
        ssd_chunked_prefill(xbc, dt_raw, dt_bias, a_log, d, chunk_size=CH, d_state=N + 1)
    with pytest.raises(ValueError, match="chunk_size"):
        ssd_chunked_prefill(xbc, dt_raw, dt_bias, a_log, d, chunk_size=12, d_state=N)


# ---------------------------------------------------------------- gated RMSNorm


@pytest.mark.parametrize("y_dtype,block_c,block_t", [(torch.float32, 1024, 4), (torch.bfloat16, 1024, 4),
                                                     (torch.float32, 16, 1), (torch.bfloat16, 32, 4)])
def test_gated_rmsnorm_matches_float64(y_dtype, block_c, block_t):
    """Channels in one masked block (1024), in 3 full blocks (16) or in 2 blocks, the last half masked (32); 4 or
    1 tokens per program (the last program of 4 holds 2 rows past the end)."""
    gen = torch.Generator().manual_seed(4)
    b, seqlen, c = 2, 3, 48
    y = torch.randn(b, seqlen, c, generator=gen).to(y_dtype)
    zx = torch.randn(b, seqlen, c + 10, generator=gen).to(torch.bfloat16)
    z = zx[:, :, 2:2 + c]  # strided view, as the gate slice of the in_proj output
    w = (1 + 0.1 * torch.randn(c, generator=gen)).to(torch.bfloat16)
    out = gated_rmsnorm(y, z, w, 1e-5, block_t=block_t, block_c=block_c)
    t = y.double() * F.silu(z.double())
    ref = w.double() * t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-5)
    assert out.dtype == torch.bfloat16 and out.is_contiguous()
    assert ((out.double() - ref).abs() <= (U_BF16 + FP32_SLACK) * ref.abs() + 1e-6).all()


def test_gated_rmsnorm_pad_rows_are_zero_without_reading_them():
    gen = torch.Generator().manual_seed(6)
    b, seqlen, c = 2, 5, 32
    mask = _left_pad_mask([5, 2], seqlen)
    y = torch.randn(b, seqlen, c, generator=gen)
    z = torch.randn(b, seqlen, c, generator=gen).to(torch.bfloat16)
    y[mask == 0] = float("nan")  # would poison the pad rows if they were read
    w = torch.ones(c, dtype=torch.bfloat16)
    out = gated_rmsnorm(y, z, w, 1e-5, attention_mask=mask, block_t=4, block_c=16)
    assert (out[mask == 0] == 0).all()
    t = y[mask == 1].double() * F.silu(z[mask == 1].double())
    ref = t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-5)
    assert ((out[mask == 1].double() - ref).abs() <= (U_BF16 + FP32_SLACK) * ref.abs() + 1e-6).all()


# ---------------------------------------------------------------- compile for the GPU

_SM90_COMPILE = r"""
import itertools
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from ssmkit.kernels.common import mapped_io
from ssmkit.kernels.granite import conv1d, decode_linear, gated_norm, mask_facts, ssd_decode, ssd_prefill

PTR = {"mask_ptr": "*i64", "index_ptr": "*i64", "table_ptr": "*i64", "stash_ptr": "*i64", "ack_ptr": "*i64",
       "facts_ptr": "*i64", "rows_ptr": "*i64", "dtcs_ptr": "*fp32", "states_ptr": "*fp32", "cb_ptr": "*fp32",
       "init_ptr": "*fp32", "final_ptr": "*fp32", "ssm_state_ptr": "*fp32", "gated_ptr": "*fp32"}


def build(fn, consts, types=None, warps=4, options=None):
    sig = {n: "constexpr" if n in consts else PTR.get(n, "*bf16") if n.endswith("_ptr") else "fp32" if n == "eps"
           else "i32" for n in fn.arg_names}
    sig.update(types or {})
    src = ASTSource(fn, sig, constexprs={(fn.arg_names.index(k),): v for k, v in consts.items()})
    triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, **(options or {})})


for packed, mask, flag in itertools.product((False, True), (False, True), (False, True)):
    if not (packed and mask):
        build(ssd_prefill._ssd_chunk_state_kernel, dict(P=64, N=128, CH=256, BLOCK_K=64, HAS_MASK=mask,
              ROUND_DT=True, STORE_CB=True, CB_SPREAD=flag, PREC=0, SPLIT_STATE=True, PACKED=packed))
        build(ssd_prefill._ssd_state_pass_kernel, dict(PN=8192, CH=256, BLOCK_S=512, HAS_INIT=flag, HAS_FINAL=True,
              HAS_MASK=mask, PACKED=packed))
        build(ssd_prefill._ssd_chunk_scan_kernel, dict(P=64, N=128, CH=256, BLOCK_M=64, HAS_MASK=mask, LOAD_CB=True,
              PREC=0, HEADS=1, PACKED=packed))
        if not mask:  # the register caps the unmasked layouts launch with (ssd_launch_options)
            build(ssd_prefill._ssd_chunk_state_kernel, dict(P=64, N=128, CH=256, BLOCK_K=64, HAS_MASK=False,
                  ROUND_DT=True, STORE_CB=True, CB_SPREAD=flag, PREC=0, SPLIT_STATE=True, PACKED=packed),
                  options=dict(maxnreg=128, num_stages=2))
            build(ssd_prefill._ssd_chunk_scan_kernel, dict(P=64, N=128, CH=256, BLOCK_M=64, HAS_MASK=False,
                  LOAD_CB=True, PREC=0, HEADS=1, PACKED=packed), options=dict(maxnreg=128))
        for rows in (False, True):  # the 2-D interior tiles, and the default sliding window
            build(conv1d._conv1d_silu_kernel, dict(K=4, HAS_BIAS=True, HAS_STATE_IN=flag, HAS_STATE_OUT=True,
                  HAS_MASK=mask, PACKED=packed, INTERIOR_OK=flag, INTERIOR_ROWS=rows, BLOCK_L=32,
                  BLOCK_C=256 if rows else 128, SUB_L=8 if rows else 32))
for packed, init in itertools.product((False, True), (False, True)):  # the fused-state form (fused_state)
    build(ssd_prefill._ssd_chunk_prep_kernel, dict(P=64, N=128, CH=256, BLOCK_K=64, HAS_MASK=not packed and init,
          ROUND_DT=True, PACKED=packed))
    build(ssd_prefill._ssd_state_fused_kernel, dict(P=64, N=128, CH=256, BLOCK_K=64, BLOCK_N=64, HAS_INIT=init,
          HAS_FINAL=True, PREC=0, SPLIT_STATE=True, PACKED=packed, STAGES=2))
# one row block per chunk (chunk_size <= block_m: the CUDA layer tests' chunk 16, a model's chunk 64), where the
# scan has no off-diagonal block (Triton 3.6's coalesce pass asserted on its loop with m the constant 0)
for ch, p, n, packed in ((16, 16, 16, False), (16, 16, 16, True), (64, 64, 128, False)):
    build(ssd_prefill._ssd_chunk_scan_kernel, dict(P=p, N=n, CH=ch, BLOCK_M=ch, HAS_MASK=False, LOAD_CB=True,
          PREC=0, HEADS=1, PACKED=packed), options=dict(maxnreg=128))
    build(ssd_prefill._ssd_chunk_state_kernel, dict(P=p, N=n, CH=ch, BLOCK_K=ch, HAS_MASK=False, ROUND_DT=True,
          STORE_CB=True, CB_SPREAD=True, PREC=0, SPLIT_STATE=True, PACKED=packed),
          options=dict(maxnreg=128, num_stages=2))
    build(ssd_prefill._ssd_chunk_prep_kernel, dict(P=p, N=n, CH=ch, BLOCK_K=ch, HAS_MASK=False, ROUND_DT=True,
          PACKED=packed))
    build(ssd_prefill._ssd_state_fused_kernel, dict(P=p, N=n, CH=ch, BLOCK_K=ch, BLOCK_N=min(n, 64), HAS_INIT=True,
          HAS_FINAL=True, PREC=0, SPLIT_STATE=True, PACKED=packed, STAGES=2))
for mask in (False, True):
    build(gated_norm._gated_rmsnorm_kernel, dict(HAS_MASK=mask, BLOCK_T=1, BLOCK_C=1024, NUM_C=3))
for indirect in (False, True):
    build(conv1d._varlen_unpack_kernel, dict(WIDTH=1536, OUT_INDIRECT=indirect, BLOCK_L=16, BLOCK_D=256),
          {"out_ptr": "*i64"} if indirect else None)
for evict, apart in itertools.product((False, True), (False, True)):  # apart: at its default 8 rows x 4 warps too
    for block_p, warps in ((32, 8), (8, 4)) if apart else ((32, 8),):
        build(ssd_decode._granite_decode_ssm_kernel, dict(INTERMEDIATE=3072, CONV_DIM=3328, NGROUPS=1,
              HEADS_PER_GROUP=48, HEADDIM=64, DSTATE=128, D_CONV=4, BLOCK_P=block_p, HAS_CONV_BIAS=True,
              ROUND_BF16=True, EVICT_FIRST=evict, CONV_APART=apart), {"act_ptr": "*fp32"}, warps=warps)
build(ssd_decode._granite_decode_conv_roll_kernel, dict(INTERMEDIATE=3072, D_CONV=4, BLOCK_C=256,
      HAS_CONV_BIAS=True), {"act_ptr": "*fp32"})
for word in (-1, 2):  # the decode out_proj GEMV, writing its own output or the posted one
    build(decode_linear._granite_decode_gemv_kernel, dict(K=3072, BLOCK_M=1, BLOCK_N=4, BLOCK_K=2048,
          OUT_WORD=word), {"io_ptr": "*i64"})
# the split-K projections: out_proj from / to posted addresses in 4 slices, in_proj unsplit at 64 rows
build(decode_linear._granite_decode_splitk_kernel, dict(K=3072, BLOCK_M=16, BLOCK_N=16, BLOCK_K=256, SPLIT=4,
      K_SLICE=768, STAGES=3, X_WORD=1, OUT_WORD=2), {"io_ptr": "*i64", "count_ptr": "*i32", "part_ptr": "*fp32"})
build(decode_linear._granite_decode_splitk_kernel, dict(K=1536, BLOCK_M=64, BLOCK_N=32, BLOCK_K=256, SPLIT=1,
      K_SLICE=1536, STAGES=4, X_WORD=-1, OUT_WORD=-1), {"io_ptr": "*i64", "count_ptr": "*i32", "part_ptr": "*fp32"})
build(ssd_decode._granite_decode_norm_roll_kernel, dict(INTERMEDIATE=3072, D_CONV=4, BLOCK_I=4096, BLOCK_C=256))
for ack, copy in itertools.product((False, True), (0, 2048)):  # copy: the small copy-in inside the fetch
    build(mapped_io._mapped_fetch_kernel, dict(WORDS=5, BLOCK=8, ACK=ack, COPY_BLOCK=copy))
build(mapped_io._mapped_copy_slots_kernel, dict(WORD0=1, OUT=False, ACK=False, BLOCK=4096, SB=32),
      {"meta_ptr": "*i64"})
build(mapped_io._mapped_copy_slots_kernel, dict(WORD0=18, OUT=True, ACK=True, BLOCK=4096, SB=32),
      {"meta_ptr": "*i64"})
build(mapped_io._mapped_copy_in_kernel, dict(BLOCK=1024))
build(mapped_io._mapped_gather_kernel, dict(WIDTH=1536, BLOCK_R=16, BLOCK_D=256))
for ack, in_type in ((False, "*bf16"), (True, "*fp32")):  # the ssm_state copy-out is fp32
    build(mapped_io._mapped_copy_out_kernel, dict(WORD=3, ACK=ack, BLOCK=1024), {"in_ptr": in_type})
for mask_type, upcast in (("*i64", False), ("*u8", False), ("*fp64", False), ("*bf16", True), ("*fp16", True)):
    build(mask_facts._mask_facts_kernel, dict(UPCAST=upcast, BLOCK=1024), {"mask_ptr": mask_type})
"""


def test_granite_kernels_compile_for_sm90(compile_for_sm90):
    """The conv, SSD and unpack kernels compile for an H100/H200 (sm_90) in every layout the layer uses (padded
    with and without a mask, packed; cb_spread, continuation; one row block per chunk; the fused-state form), and so
    do the decode kernels (with and without the evict-first hint, the conv in the state kernel or apart), the
    decode graph's mapped copies and the
    mask-facts kernel. The interpreter does not
    type-check like the compiler (a loop-carried variable changing type passed here and failed on the GPU), so
    this runs Triton's real compiler on the CPU (the ``compile_for_sm90`` fixture)."""
    compile_for_sm90(_SM90_COMPILE, timeout=600)
