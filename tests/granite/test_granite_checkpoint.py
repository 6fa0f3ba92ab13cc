"""Layer slices: synthetic statistics, save/load, extraction from HF safetensors checkpoints (written here)."""
import json

import pytest
import torch
from safetensors.torch import save_file

from ssmkit.granite import (GraniteMambaConfig, LayerSlice, ReferenceMambaLayer, extract_slice, load_slice,
                            save_slice, synthetic_slice)
from ssmkit.granite.checkpoint import expected_mamba_shapes

TINY = GraniteMambaConfig.tiny()


def test_expected_shapes_are_the_layer_state_dict_and_spec_sizes():
    for config in (TINY, GraniteMambaConfig.tiny(proj_bias=True, conv_bias=False), GraniteMambaConfig()):
        layer_shapes = {k: tuple(v.shape) for k, v in ReferenceMambaLayer(config).state_dict().items()}
        assert expected_mamba_shapes(config) == layer_shapes
    real = expected_mamba_shapes(GraniteMambaConfig())
    assert sum(torch.Size(s).numel() for s in real.values()) == 14_642_576  # spec §1.2 mixer total


def test_synthetic_slice_is_deterministic_and_realistic():
    a, b, c = synthetic_slice(TINY, 5), synthetic_slice(TINY, 5), synthetic_slice(TINY, 6)
    for name in a.mamba:
        assert torch.equal(a.mamba[name], b.mamba[name])
        assert a.mamba[name].dtype == torch.bfloat16
    assert torch.equal(a.embedding, b.embedding) and not torch.equal(a.embedding, c.embedding)
    assert a.embedding.shape == (128, 64) and a.final_norm.shape == (64,)
    m = {k: v.float() for k, v in a.mamba.items()}
    A = m["A_log"].exp()
    assert A.min() >= 1 and A.max() <= 16 * 1.01
    dt = torch.nn.functional.softplus(m["dt_bias"])
    assert dt.min() >= 1e-3 * 0.99 and dt.max() <= 1e-1 * 1.01
    assert torch.all(m["D"] == 1)
    assert abs(m["norm.weight"].mean() - 1) < 0.05 and 0.05 < m["norm.weight"].std() < 0.15
    for name in ("in_proj.weight", "out_proj.weight"):
        assert 0.015 < m[name].std() < 0.025 and abs(m[name].mean()) < 0.002
    assert 0.015 < a.embedding.float().std() < 0.025


def test_save_load_round_trip(tmp_path):
    s = synthetic_slice(TINY, 1)
    save_slice(s, tmp_path / "s.safetensors")
    t = load_slice(tmp_path / "s.safetensors")
    assert t.config == TINY
    assert set(t.mamba) == set(s.mamba) and all(torch.equal(t.mamba[k], s.mamba[k]) for k in s.mamba)
    assert torch.equal(t.final_norm, s.final_norm) and torch.equal(t.embedding, s.embedding)
    layer = ReferenceMambaLayer(t.config).to(torch.bfloat16)
    layer.load_state_dict(t.mamba)


def test_load_slice_rejects_other_files(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_slice(tmp_path / "missing.safetensors")
    save_file({"x": torch.zeros(2)}, str(tmp_path / "other.safetensors"))
    with pytest.raises(ValueError, match="not an ssmkit Granite slice"):
        load_slice(tmp_path / "other.safetensors")
    s = synthetic_slice(TINY, 1)
    s.mamba["D"] = torch.ones(3)
    with pytest.raises(ValueError, match="'D' has shape"):
        save_slice(s, tmp_path / "bad.safetensors")
    with pytest.raises(TypeError):
        save_slice({"mamba": {}}, tmp_path / "bad.safetensors")


def _hf_raw_config(layer_types):
    return {"model_type": "granitemoehybrid", "architectures": ["GraniteMoeHybridForCausalLM"], "hidden_size": 64,
            "mamba_n_heads": 8, "mamba_d_head": 16, "mamba_d_state": 16, "mamba_n_groups": 1, "mamba_d_conv": 4,
            "mamba_expand": 2, "mamba_chunk_size": 8, "mamba_conv_bias": True, "mamba_proj_bias": False,
            "rms_norm_eps": 1e-5, "vocab_size": 128, "logits_scaling": 6.0, "tie_word_embeddings": True,
            "hidden_act": "silu", "num_hidden_layers": len(layer_types), "layer_types": layer_types}


def _write_checkpoint(folder, sharded, seed=0):
    """A tiny 3-layer HF-style checkpoint (mamba, attention, mamba) with extra non-mixer tensors."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(_hf_raw_config(["mamba", "attention", "mamba"])))
    gen = torch.Generator().manual_seed(seed)
    tensors = {}
    for layer in (0, 2):
        for name, shape in expected_mamba_shapes(TINY).items():
            dtype = torch.float32 if name == "A_log" else torch.bfloat16  # mixed stored dtypes are kept
            tensors[f"model.layers.{layer}.mamba.{name}"] = torch.randn(shape, generator=gen).to(dtype)
        tensors[f"model.layers.{layer}.input_layernorm.weight"] = torch.randn(64, generator=gen).bfloat16()
    tensors["model.layers.1.self_attn.q_proj.weight"] = torch.randn(64, 64, generator=gen).bfloat16()
    tensors["model.embed_tokens.weight"] = torch.randn(128, 64, generator=gen).bfloat16()
    tensors["model.norm.weight"] = torch.randn(64, generator=gen).bfloat16()
    if not sharded:
        save_file(tensors, str(folder / "model.safetensors"))
        return tensors
    keys = sorted(tensors)
    shards = {"model-00001-of-00002.safetensors": keys[::2], "model-00002-of-00002.safetensors": keys[1::2]}
    weight_map = {}
    for file, names in shards.items():
        save_file({k: tensors[k] for k in names}, str(folder / file))
        weight_map.update(dict.fromkeys(names, file))
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return tensors


@pytest.mark.parametrize("sharded", [True, False])
def test_extract_slice_reads_the_layer_from_a_checkpoint_folder(tmp_path, sharded):
    tensors = _write_checkpoint(tmp_path / "ckpt", sharded)
    out = tmp_path / "slice.safetensors"
    s = extract_slice(tmp_path / "ckpt", out, layer=2)
    assert s.config == TINY
    for name in expected_mamba_shapes(TINY):
        want = tensors[f"model.layers.2.mamba.{name}"]
        assert torch.equal(s.mamba[name], want) and s.mamba[name].dtype == want.dtype
    assert torch.equal(s.embedding, tensors["model.embed_tokens.weight"])
    assert torch.equal(s.final_norm, tensors["model.norm.weight"])
    loaded = load_slice(out)
    assert all(torch.equal(loaded.mamba[k], s.mamba[k]) for k in s.mamba)


def test_extract_slice_errors(tmp_path):
    _write_checkpoint(tmp_path / "ckpt", sharded=True)
    with pytest.raises(ValueError, match="not a Mamba layer"):
        extract_slice(tmp_path / "ckpt", tmp_path / "s.safetensors", layer=1)
    with pytest.raises(ValueError, match="layer must be"):
        extract_slice(tmp_path / "ckpt", tmp_path / "s.safetensors", layer=3)
    index = json.loads((tmp_path / "ckpt" / "model.safetensors.index.json").read_text())
    del index["weight_map"]["model.norm.weight"]
    (tmp_path / "ckpt" / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match="lacks"):
        extract_slice(tmp_path / "ckpt", tmp_path / "s.safetensors", layer=0)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "config.json").write_text(json.dumps(_hf_raw_config(["mamba"])))
    with pytest.raises(FileNotFoundError, match="no model.safetensors"):
        extract_slice(tmp_path / "empty", tmp_path / "s.safetensors")


def test_extract_slice_resolves_repo_ids_only_from_the_local_hub_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(FileNotFoundError, match="local Hugging Face cache"):
        extract_slice("ibm-granite/granite-4.0-h-1b-base", tmp_path / "s.safetensors")
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--someone--tiny-granite"
    tensors = _write_checkpoint(repo / "snapshots" / commit, sharded=False, seed=3)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    s = extract_slice("someone/tiny-granite", tmp_path / "s.safetensors", layer=0)
    assert torch.equal(s.mamba["in_proj.weight"], tensors["model.layers.0.mamba.in_proj.weight"])
    with pytest.raises(ValueError, match="is a file"):
        extract_slice(tmp_path / "s.safetensors", tmp_path / "t.safetensors")


def test_layer_slice_validate_names_missing_weights():
    s = synthetic_slice(TINY, 0)
    del s.mamba["A_log"]
    with pytest.raises(ValueError, match="missing \\['A_log'\\]"):
        s.validate()
    with pytest.raises(ValueError, match="embedding"):
        LayerSlice(TINY, synthetic_slice(TINY, 0).mamba, torch.ones(64), torch.zeros(3, 64)).validate()
