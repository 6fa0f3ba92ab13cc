"""Layer slices: the weights one mixer layer and the readout need, from a real checkpoint or synthetic.

A slice file is one safetensors file with tensors ``mamba.<name>`` (HF names without the
``model.layers.{i}.mamba.`` prefix), ``final_norm`` (``model.norm.weight``) and ``embedding``
(``model.embed_tokens.weight``, tied to lm_head: spec §1.3), and metadata ``config`` (GraniteMambaConfig as JSON),
``format`` and ``source``.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from ssmkit.granite.config import GraniteMambaConfig

__all__ = ["LayerSlice", "synthetic_slice", "save_slice", "load_slice", "extract_slice", "expected_mamba_shapes"]

_FORMAT = "ssmkit.granite.slice/1"
_EMBED_KEY = "model.embed_tokens.weight"
_NORM_KEY = "model.norm.weight"


@dataclass
class LayerSlice:
    """Weights of one mixer layer plus the readout.

    ``mamba``: HF parameter names without the layer prefix -> tensors (shapes of ``expected_mamba_shapes``);
    ``final_norm``: (hidden,); ``embedding``: (vocab, hidden).
    """

    config: GraniteMambaConfig
    mamba: dict[str, torch.Tensor]
    final_norm: torch.Tensor
    embedding: torch.Tensor

    def validate(self) -> "LayerSlice":
        """Raise ValueError unless names and shapes match ``config``; return self."""
        expected = expected_mamba_shapes(self.config)
        missing, extra = sorted(set(expected) - set(self.mamba)), sorted(set(self.mamba) - set(expected))
        if missing or extra:
            raise ValueError(f"slice mamba weights do not match the config: missing {missing}, unexpected {extra}")
        for name, shape in expected.items():
            if tuple(self.mamba[name].shape) != shape:
                raise ValueError(f"slice weight {name!r} has shape {tuple(self.mamba[name].shape)}, "
                                 f"expected {shape}")
        hidden, vocab = self.config.hidden_size, self.config.vocab_size
        if tuple(self.final_norm.shape) != (hidden,):
            raise ValueError(f"final_norm has shape {tuple(self.final_norm.shape)}, expected {(hidden,)}")
        if tuple(self.embedding.shape) != (vocab, hidden):
            raise ValueError(f"embedding has shape {tuple(self.embedding.shape)}, expected {(vocab, hidden)}")
        return self


def expected_mamba_shapes(config: GraniteMambaConfig) -> dict[str, tuple[int, ...]]:
    """Parameter name -> shape of ``ReferenceMambaLayer(config)``'s state dict (spec §1.2)."""
    c = config
    shapes = {
        "dt_bias": (c.num_heads,),
        "A_log": (c.num_heads,),
        "D": (c.num_heads,),
        "in_proj.weight": (c.in_proj_dim, c.hidden_size),
        "conv1d.weight": (c.conv_dim, 1, c.d_conv),
        "norm.weight": (c.intermediate_size,),
        "out_proj.weight": (c.hidden_size, c.intermediate_size),
    }
    if c.proj_bias:
        shapes["in_proj.bias"] = (c.in_proj_dim,)
        shapes["out_proj.bias"] = (c.hidden_size,)
    if c.conv_bias:
        shapes["conv1d.bias"] = (c.conv_dim,)
    return shapes


def synthetic_slice(config: GraniteMambaConfig, seed: int) -> LayerSlice:
    """A deterministic random slice with realistic statistics, every tensor bf16 on the CPU.

    A_log = log U(1, 16); dt_bias = softplus⁻¹(dt) with dt log-uniform in [1e-3, 1e-1]; D = 1; norm weights
    1 + 0.1·N(0, 1); in_proj, out_proj, embedding (and projection biases if any) N(0, 0.02²); conv weight
    N(0, 0.25²), conv bias N(0, 0.05²). Same ``(config, seed)`` -> same tensors.
    """
    config.validate()
    gen = torch.Generator().manual_seed(int(seed))

    def normal(shape, std, mean=0.0):
        return torch.randn(shape, generator=gen) * std + mean

    def uniform(shape, lo, hi):
        return torch.rand(shape, generator=gen) * (hi - lo) + lo

    heads = config.num_heads
    dt = torch.exp(uniform(heads, math.log(1e-3), math.log(1e-1)))
    values = {
        "in_proj.weight": lambda s: normal(s, 0.02),
        "in_proj.bias": lambda s: normal(s, 0.02),
        "conv1d.weight": lambda s: normal(s, 0.25),
        "conv1d.bias": lambda s: normal(s, 0.05),
        "dt_bias": lambda s: dt + torch.log(-torch.expm1(-dt)),
        "A_log": lambda s: torch.log(uniform(s, 1.0, 16.0)),
        "D": lambda s: torch.ones(s),
        "norm.weight": lambda s: normal(s, 0.1, 1.0),
        "out_proj.weight": lambda s: normal(s, 0.02),
        "out_proj.bias": lambda s: normal(s, 0.02),
    }
    mamba = {name: values[name](shape).to(torch.bfloat16)
             for name, shape in expected_mamba_shapes(config).items()}
    final_norm = normal(config.hidden_size, 0.1, 1.0).to(torch.bfloat16)
    embedding = normal((config.vocab_size, config.hidden_size), 0.02).to(torch.bfloat16)
    return LayerSlice(config, mamba, final_norm, embedding).validate()


def save_slice(layer_slice: LayerSlice, path, source: str = "") -> None:
    """Write ``layer_slice`` to one safetensors file at ``path`` (config JSON in its metadata)."""
    if not isinstance(layer_slice, LayerSlice):
        raise TypeError(f"save_slice expects a LayerSlice, got {type(layer_slice).__name__}")
    layer_slice.validate()
    tensors = {f"mamba.{k}": v.contiguous() for k, v in layer_slice.mamba.items()}
    tensors["final_norm"] = layer_slice.final_norm.contiguous()
    tensors["embedding"] = layer_slice.embedding.contiguous()
    metadata = {"format": _FORMAT, "config": json.dumps(layer_slice.config.to_dict()), "source": source}
    save_file(tensors, os.fspath(path), metadata=metadata)


def load_slice(path) -> LayerSlice:
    """Read a slice file written by ``save_slice``/``extract_slice`` (CPU tensors, stored dtypes)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no slice file at {path!r}")
    with safe_open(path, framework="pt") as fh:
        metadata = fh.metadata() or {}
        if metadata.get("format") != _FORMAT:
            raise ValueError(f"{path!r} is not an ssmkit Granite slice (format {metadata.get('format')!r}, "
                             f"expected {_FORMAT!r})")
        tensors = {key: fh.get_tensor(key) for key in fh.keys()}
    config = GraniteMambaConfig.from_dict(json.loads(metadata["config"]))
    mamba = {key[len("mamba."):]: t for key, t in tensors.items() if key.startswith("mamba.")}
    if "final_norm" not in tensors or "embedding" not in tensors:
        raise ValueError(f"{path!r} lacks 'final_norm' or 'embedding'")
    return LayerSlice(config, mamba, tensors["final_norm"], tensors["embedding"]).validate()


def _resolve_checkpoint_dir(path_or_repo_id) -> str:
    """A local folder as is; otherwise a hub repo id resolved ONLY from the local hub cache (no network)."""
    path = os.fspath(path_or_repo_id)
    if os.path.isdir(path):
        return path
    if os.path.exists(path):
        raise ValueError(f"{path!r} is a file; pass the checkpoint folder (with config.json) or a hub repo id")
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError
    except ImportError as exc:
        raise FileNotFoundError(f"{path!r} is not a folder and huggingface_hub is not installed to look it up "
                                f"in the local hub cache") from exc
    try:
        return snapshot_download(path, local_files_only=True,
                                 allow_patterns=["config.json", "*.safetensors", "*.safetensors.index.json"])
    except (LocalEntryNotFoundError, ValueError, OSError) as exc:
        raise FileNotFoundError(
            f"{path!r} is neither a local folder nor a repo in the local Hugging Face cache; download it first "
            f"(network access is never used here): {exc}") from exc


def _tensor_files(folder: str, keys: list[str]) -> dict[str, str]:
    """key -> safetensors file holding it (sharded via model.safetensors.index.json, or one model.safetensors)."""
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.isfile(index):
        with open(index, encoding="utf-8") as fh:
            weight_map = json.load(fh)["weight_map"]
        missing = [k for k in keys if k not in weight_map]
        if missing:
            raise ValueError(f"checkpoint index {index!r} lacks {missing}")
        return {k: os.path.join(folder, weight_map[k]) for k in keys}
    single = os.path.join(folder, "model.safetensors")
    if not os.path.isfile(single):
        raise FileNotFoundError(f"no model.safetensors or model.safetensors.index.json in {folder!r}")
    return dict.fromkeys(keys, single)


def extract_slice(path_or_repo_id, out_path, layer: int = 0) -> LayerSlice:
    """Extract mixer layer ``layer``, ``model.norm`` and the tied embedding from an HF checkpoint into one file.

    ``path_or_repo_id``: a local checkpoint folder (config.json + safetensors, single or sharded) or a hub repo
    id already in the local hub cache. Reads config.json with ``GraniteMambaConfig.from_hf_config``, checks the
    layer is a Mamba layer, reads only the needed tensors (stored dtypes kept), writes ``out_path`` with
    ``save_slice`` and returns the slice.
    """
    folder = _resolve_checkpoint_dir(path_or_repo_id)
    config = GraniteMambaConfig.from_hf_config(folder)
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as fh:
        raw = json.load(fh)
    num_layers = raw.get("num_hidden_layers")
    if not isinstance(layer, int) or layer < 0 or (num_layers is not None and layer >= num_layers):
        raise ValueError(f"layer must be an int in [0, {num_layers}), got {layer!r}")
    layer_types = raw.get("layer_types") or raw.get("layers_block_type")
    if layer_types is not None and layer_types[layer] not in ("mamba", "linear_attention"):
        raise ValueError(f"layer {layer} is a {layer_types[layer]!r} layer, not a Mamba layer")
    prefix = f"model.layers.{layer}.mamba."
    names = list(expected_mamba_shapes(config))
    keys = [prefix + n for n in names] + [_NORM_KEY, _EMBED_KEY]
    tensors = {}
    files = _tensor_files(folder, keys)
    for file in sorted(set(files.values())):
        with safe_open(file, framework="pt") as fh:
            for key in (k for k, f in files.items() if f == file):
                if key not in fh.keys():
                    raise ValueError(f"{file!r} lacks tensor {key!r}")
                tensors[key] = fh.get_tensor(key)
    layer_slice = LayerSlice(config, {n: tensors[prefix + n] for n in names}, tensors[_NORM_KEY],
                             tensors[_EMBED_KEY]).validate()
    save_slice(layer_slice, out_path, source=f"{os.fspath(path_or_repo_id)} layer {layer}")
    return layer_slice
