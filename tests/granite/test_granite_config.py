"""GraniteMambaConfig and MambaCache: defaults, derived sizes, HF config parsing, validation, cache basics."""
import json
import math

import pytest
import torch

from ssmkit.granite import GraniteMambaConfig, MambaCache


def test_defaults_are_granite_4_0_h_1b_base():
    c = GraniteMambaConfig()
    assert (c.hidden_size, c.num_heads, c.head_dim, c.d_state, c.n_groups, c.d_conv, c.expand, c.chunk_size) == (
        1536, 48, 64, 128, 1, 4, 2, 256)
    assert (c.intermediate_size, c.conv_dim, c.in_proj_dim) == (3072, 3328, 6448)
    assert c.rms_norm_eps == 1e-5 and c.logits_scaling == 6.0 and c.vocab_size == 100352
    assert c.conv_bias and not c.proj_bias and c.tie_word_embeddings
    assert c.time_step_limit == (0.0, math.inf)


def test_tiny_config_sizes_and_overrides():
    t = GraniteMambaConfig.tiny()
    assert (t.hidden_size, t.num_heads, t.head_dim, t.d_state, t.chunk_size, t.vocab_size) == (64, 8, 16, 16, 8, 128)
    assert t.intermediate_size == 128 and t.conv_dim == 160 and t.in_proj_dim == 296
    assert GraniteMambaConfig.tiny(n_groups=2).conv_dim == 128 + 64


def test_from_hf_config_reads_the_mixer_keys(tmp_path):
    raw = {"model_type": "granitemoehybrid", "hidden_size": 64, "mamba_n_heads": 4, "mamba_d_head": "auto",
           "mamba_d_state": 8, "mamba_n_groups": 2, "mamba_d_conv": 3, "mamba_expand": 2, "mamba_chunk_size": 16,
           "mamba_conv_bias": False, "mamba_proj_bias": True, "rms_norm_eps": 1e-6, "vocab_size": 99,
           "logits_scaling": 2.5, "tie_word_embeddings": True, "time_step_limit": [0.0, 0.5],
           "hidden_act": "silu", "num_hidden_layers": 2}
    (tmp_path / "config.json").write_text(json.dumps(raw))
    for source in (raw, tmp_path, tmp_path / "config.json", str(tmp_path)):
        c = GraniteMambaConfig.from_hf_config(source)
        assert c.head_dim == 32 and c.n_groups == 2 and c.d_conv == 3 and c.chunk_size == 16
        assert not c.conv_bias and c.proj_bias and c.rms_norm_eps == 1e-6 and c.vocab_size == 99
        assert c.logits_scaling == 2.5 and c.time_step_limit == (0.0, 0.5)


def test_from_hf_config_missing_keys_keep_defaults():
    c = GraniteMambaConfig.from_hf_config({"model_type": "granitemoehybrid"})
    assert c == GraniteMambaConfig()


@pytest.mark.parametrize("raw, match", [
    ({"model_type": "llama"}, "granitemoehybrid"),
    ({"hidden_act": "gelu"}, "silu"),
    ({"time_step_limit": None}, "time_step_limit"),
    ({"mamba_n_heads": 7}, "num_heads \\* head_dim"),
    ({"tie_word_embeddings": False}, "tie_word_embeddings"),
])
def test_from_hf_config_rejects_unsupported(raw, match):
    with pytest.raises(ValueError, match=match):
        GraniteMambaConfig.from_hf_config(raw)


def test_from_hf_config_bad_source():
    with pytest.raises(FileNotFoundError):
        GraniteMambaConfig.from_hf_config("/nonexistent/granite")
    with pytest.raises(TypeError):
        GraniteMambaConfig.from_hf_config(42)


@pytest.mark.parametrize("overrides, match", [
    ({"n_groups": 3}, "multiple of n_groups"),
    ({"head_dim": 8}, "num_heads \\* head_dim"),
    ({"chunk_size": 0}, "chunk_size"),
    ({"rms_norm_eps": 0.0}, "rms_norm_eps"),
    ({"time_step_limit": (1.0, 0.0)}, "time_step_limit"),
])
def test_validate_names_the_problem(overrides, match):
    with pytest.raises(ValueError, match=match):
        GraniteMambaConfig.tiny(**overrides)


def test_to_dict_round_trips_through_json():
    c = GraniteMambaConfig()
    assert GraniteMambaConfig.from_dict(json.loads(json.dumps(c.to_dict()))) == c
    with pytest.raises(ValueError, match="unknown"):
        GraniteMambaConfig.from_dict({**c.to_dict(), "bogus": 1})


def test_cache_zeros_shapes_dtypes_and_clone_is_deep():
    c = GraniteMambaConfig.tiny()
    cache = MambaCache.zeros(c, 3)
    assert cache.conv_state.shape == (3, 160, 4) and cache.conv_state.dtype == torch.bfloat16
    assert cache.ssm_state.shape == (3, 8, 16, 16) and cache.ssm_state.dtype == torch.float32
    assert not cache.has_previous_state and cache.seqlen_offset == 0 and cache.batch_size == 3
    cache.has_previous_state, cache.seqlen_offset = True, 5
    copy = cache.clone()
    copy.ssm_state.fill_(1.0)
    copy.conv_state.fill_(2.0)
    assert copy.has_previous_state and copy.seqlen_offset == 5
    assert cache.ssm_state.abs().sum() == 0 and cache.conv_state.abs().sum() == 0
    with pytest.raises(ValueError, match="batch"):
        MambaCache.zeros(c, 0)
