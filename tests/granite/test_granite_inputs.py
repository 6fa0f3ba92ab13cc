"""ReferenceMambaLayer rejects bad input with clear TypeError/ValueError messages."""
import pytest
import torch

from ssmkit.granite import GraniteMambaConfig, MambaCache, ReferenceMambaLayer

TINY = GraniteMambaConfig.tiny()


@pytest.fixture(scope="module")
def layer():
    return ReferenceMambaLayer(TINY).to(torch.bfloat16)


def _h(b=2, length=5, hidden=TINY.hidden_size, dtype=torch.bfloat16):
    return torch.randn(b, length, hidden).to(dtype)


def test_constructor_rejects_non_config():
    with pytest.raises(TypeError, match="GraniteMambaConfig"):
        ReferenceMambaLayer({"hidden_size": 64})


def test_parameter_names_and_shapes_are_transformers():
    names = {k: tuple(v.shape) for k, v in ReferenceMambaLayer(TINY).state_dict().items()}
    assert names == {"in_proj.weight": (296, 64), "conv1d.weight": (160, 1, 4), "conv1d.bias": (160,),
                     "dt_bias": (8,), "A_log": (8,), "D": (8,), "norm.weight": (128,), "out_proj.weight": (64, 128)}


@pytest.mark.parametrize("make, exc, match", [
    (lambda: [[1.0]], TypeError, "torch.Tensor"),
    (lambda: torch.randn(5, 64).bfloat16(), ValueError, "rank 2"),
    (lambda: _h(hidden=32), ValueError, "hidden_size=64"),
    (lambda: _h(length=0), ValueError, "seq_len >= 1"),
    (lambda: _h(dtype=torch.float32), TypeError, "does not match the layer weights"),
    (lambda: torch.empty(2, 5, 64, dtype=torch.bfloat16, device="meta"), ValueError, "is on meta"),
])
def test_bad_hidden_states(layer, make, exc, match):
    with pytest.raises(exc, match=match):
        layer(make())


@pytest.mark.parametrize("mask, exc, match", [
    (torch.ones(2, 4, dtype=torch.long), ValueError, "shape"),
    (torch.ones(5, dtype=torch.long), ValueError, "shape"),
    (torch.full((2, 5), 2, dtype=torch.long), ValueError, "only 0 and 1"),
    (torch.full((2, 5), 0.5), ValueError, "only 0 and 1"),
    ([[1, 1, 1, 1, 1]] * 2, TypeError, "attention_mask"),
    (torch.ones(2, 5, dtype=torch.long, device="meta"), ValueError, "attention_mask is on meta"),
])
def test_bad_attention_mask(layer, mask, exc, match):
    with pytest.raises(exc, match=match):
        layer(_h(), attention_mask=mask)


def test_bad_cache(layer):
    with pytest.raises(TypeError, match="MambaCache"):
        layer(_h(), cache={"conv_state": None})
    with pytest.raises(ValueError, match="batch mismatch"):
        layer(_h(b=2), cache=MambaCache.zeros(TINY, 3))
    with pytest.raises(ValueError, match="does not match the layer config"):
        layer(_h(), cache=MambaCache.zeros(GraniteMambaConfig.tiny(d_state=8), 2))
    with pytest.raises(TypeError, match="conv_state dtype"):
        layer(_h(), cache=MambaCache.zeros(TINY, 2, dtype=torch.float32))
    bad_ssm = MambaCache.zeros(TINY, 2)
    bad_ssm.ssm_state = bad_ssm.ssm_state.bfloat16()
    with pytest.raises(TypeError, match="float32"):
        layer(_h(), cache=bad_ssm)


def test_rejected_call_leaves_cache_untouched(layer):
    cache = MambaCache.zeros(TINY, 2)
    with pytest.raises(ValueError):
        layer(_h(), cache=cache, attention_mask=torch.full((2, 5), 3))
    assert not cache.has_previous_state and cache.seqlen_offset == 0


def test_mask_is_ignored_for_single_token_and_all_ones(layer):
    """As transformers 5.17's create_recurrent_attention_mask: no mask for L == 1 or an all-ones mask."""
    h1 = _h(length=1)
    with torch.no_grad():
        plain, _ = layer(h1)
        masked, _ = layer(h1, attention_mask=torch.zeros(2, 1, dtype=torch.long))
        assert torch.equal(plain, masked)
        h = _h()
        assert torch.equal(layer(h)[0], layer(h, attention_mask=torch.ones(2, 5, dtype=torch.bool))[0])
