"""ReferenceMambaLayer in float32 against a float64 token-by-token recurrence (granite_testlib.mixer_float64).

The oracle shares no code with the chunked SSD. float32 vs float64: the observed max error relative to the
quantity's max is ~1e-6 (fp32 eps 1.2e-7 times sums of a few hundred decayed terms); TOL = 1e-5 leaves a margin
and still catches any wrong term (a mis-scaled decay, a lost chunk carry or an off-by-one conv tap give >= 1e-3).
"""
import pytest
import torch

from granite_testlib import left_padding_mask, make_layer, max_rel_err, mixer_float64, random_hidden
from ssmkit.granite import GraniteMambaConfig, MambaCache
from ssmkit.granite.reference import segment_sum

TOL = 1e-5
REAL = GraniteMambaConfig()
TINY = GraniteMambaConfig.tiny()


@pytest.fixture(scope="module")
def real_layer():
    return make_layer(REAL, torch.float32, seed=3)


@pytest.fixture(scope="module")
def tiny_layer():
    return make_layer(TINY, torch.float32, seed=4)


def _check(out, cache, want):
    want_out, want_conv, want_ssm = want
    assert max_rel_err(out, want_out) < TOL
    assert max_rel_err(cache.ssm_state, want_ssm) < TOL
    assert max_rel_err(cache.conv_state, want_conv) < TOL


def test_segment_sum_matches_definition():
    a = torch.randn(2, 5, dtype=torch.float64)
    s = segment_sum(a)
    for i in range(5):
        for j in range(5):
            want = a[:, j + 1: i + 1].sum(-1) if i >= j else torch.full((2,), -torch.inf, dtype=torch.float64)
            assert torch.allclose(s[:, i, j], want)


@pytest.mark.parametrize("length", [1, 2, 3, 7, 8, 9, 17])
def test_tiny_prefill_matches_float64_recurrence_at_chunk_edges(tiny_layer, length):
    h = random_hidden(2, length, TINY.hidden_size, torch.float32, seed=length)
    with torch.no_grad():
        out, cache = tiny_layer(h)
    _check(out, cache, mixer_float64(tiny_layer, h))
    assert cache.has_previous_state and cache.seqlen_offset == length


@pytest.mark.parametrize("length", [1, 2, 3, 255, 256])
def test_real_prefill_matches_float64_recurrence_at_chunk_edges(real_layer, length):
    h = random_hidden(1, length, REAL.hidden_size, torch.float32, seed=100 + length)
    with torch.no_grad():
        out, cache = real_layer(h)
    _check(out, cache, mixer_float64(real_layer, h))


def test_real_left_padded_rows_of_very_different_lengths(real_layer):
    """L = 257 (one token past the first chunk) with rows of 257, 2 and 256 real tokens."""
    lengths = [257, 2, 256]
    mask = left_padding_mask(lengths, 257)
    h = random_hidden(3, 257, REAL.hidden_size, torch.float32, seed=7)
    with torch.no_grad():
        out, cache = real_layer(h, attention_mask=mask)
    _check(out, cache, mixer_float64(real_layer, h, mask))
    assert torch.all(out[mask == 0] == 0), "pad positions must give exactly 0 (gate is 0 there)"
    # Each row equals the same row run alone without padding (left padding is exact, spec §3.3).
    for row, n in enumerate(lengths):
        with torch.no_grad():
            alone, alone_cache = real_layer(h[row:row + 1, 257 - n:])
        assert max_rel_err(out[row:row + 1, 257 - n:], alone) < TOL
        assert max_rel_err(cache.ssm_state[row], alone_cache.ssm_state[0]) < TOL
        assert max_rel_err(cache.conv_state[row], alone_cache.conv_state[0]) < TOL


def test_tiny_continuation_and_decode_match_float64_recurrence(tiny_layer):
    b = 3
    lengths = [13, 5, 1]
    mask = left_padding_mask(lengths, 13)
    h = random_hidden(b, 13, TINY.hidden_size, torch.float32, seed=11)
    with torch.no_grad():
        out, cache = tiny_layer(h, attention_mask=mask)
    want = mixer_float64(tiny_layer, h, mask)
    _check(out, cache, want)
    conv_id, ssm_id = cache.conv_state.data_ptr(), cache.ssm_state.data_ptr()
    offset = 13
    for step, length in enumerate([1, 10, 1, 1, 2, 1]):
        h = random_hidden(b, length, TINY.hidden_size, torch.float32, seed=50 + step)
        with torch.no_grad():
            out, returned = tiny_layer(h, cache)
        want = mixer_float64(tiny_layer, h, None, want[1], want[2])
        assert returned is cache
        assert cache.conv_state.data_ptr() == conv_id and cache.ssm_state.data_ptr() == ssm_id, "in place"
        offset += length
        assert cache.seqlen_offset == offset
        _check(out, cache, want)


def test_real_decode_matches_float64_recurrence(real_layer):
    h = random_hidden(2, 20, REAL.hidden_size, torch.float32, seed=12)
    with torch.no_grad():
        _, cache = real_layer(h)
    want = mixer_float64(real_layer, h)
    for step in range(3):
        h = random_hidden(2, 1, REAL.hidden_size, torch.float32, seed=60 + step)
        with torch.no_grad():
            out, _ = real_layer(h, cache)
        want = mixer_float64(real_layer, h, None, want[1], want[2])
        _check(out, cache, want)


def test_decode_and_continuation_match_full_recompute(tiny_layer):
    h = random_hidden(2, 30, TINY.hidden_size, torch.float32, seed=13)
    with torch.no_grad():
        full, full_cache = tiny_layer(h)
        _, cache = tiny_layer(h[:, :17])
        cont, _ = tiny_layer(h[:, 17:27], cache)
        steps = [tiny_layer(h[:, t:t + 1], cache)[0] for t in range(27, 30)]
    assert max_rel_err(cont, full[:, 17:27]) < TOL
    assert max_rel_err(torch.cat(steps, dim=1), full[:, 27:]) < TOL
    assert max_rel_err(cache.ssm_state, full_cache.ssm_state) < TOL
    assert max_rel_err(cache.conv_state, full_cache.conv_state) < TOL


def test_single_token_without_cache_is_prefill_of_length_one(tiny_layer):
    h = random_hidden(2, 1, TINY.hidden_size, torch.float32, seed=14)
    with torch.no_grad():
        out, cache = tiny_layer(h)
    _check(out, cache, mixer_float64(tiny_layer, h))
    # An empty cache (has_previous_state False) is also a prefill, written in place over any old contents.
    empty = MambaCache.zeros(TINY, 2, dtype=torch.float32)
    empty.conv_state.fill_(float("nan"))
    empty.ssm_state.fill_(float("nan"))
    empty.seqlen_offset = 7  # stale: a prefill restarts the count
    with torch.no_grad():
        out2, returned = tiny_layer(h, empty)
    assert returned is empty and empty.has_previous_state and empty.seqlen_offset == 1
    assert torch.isfinite(empty.conv_state).all() and torch.isfinite(empty.ssm_state).all()
    assert torch.equal(out2, out) and torch.equal(empty.ssm_state, cache.ssm_state)


def test_time_step_limit_clamps_prefill_dt(tiny_layer):
    limited = make_layer(GraniteMambaConfig.tiny(time_step_limit=(0.0, 0.02)), torch.float32, seed=4)
    h = random_hidden(1, 12, TINY.hidden_size, torch.float32, seed=15)
    with torch.no_grad():
        out, cache = limited(h)
        _, free_cache = tiny_layer(h)
    _check(out, cache, mixer_float64(limited, h))
    assert max_rel_err(cache.ssm_state, free_cache.ssm_state) > 0.1, "the clamp must change the state here"


def test_forward_is_inference_only(tiny_layer):
    assert all(p.requires_grad for p in tiny_layer.parameters())
    out, cache = tiny_layer(random_hidden(1, 3, TINY.hidden_size, torch.float32, seed=16).requires_grad_())
    assert not out.requires_grad and not cache.ssm_state.requires_grad


def test_ieee_fp32_turns_tf32_off_and_restores_the_flags():
    from ssmkit.granite.reference import ieee_fp32

    before = (torch.backends.cuda.matmul.fp32_precision, torch.backends.cudnn.conv.fp32_precision)
    with ieee_fp32():
        assert torch.backends.cuda.matmul.fp32_precision == "ieee"
        assert torch.backends.cudnn.conv.fp32_precision == "ieee"
    assert (torch.backends.cuda.matmul.fp32_precision, torch.backends.cudnn.conv.fp32_precision) == before
