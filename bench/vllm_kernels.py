"""vLLM 0.33's Mamba-2 Triton kernels (issue 5's VLLM anchor), loaded from .anchors/ without the rest of vllm.

`bench/anchor_setup.sh vllm` puts the kernels' files (``vllm/model_executor/layers/mamba/ops/``, from the vllm 0.33.0
wheel; git-ignored, never committed) under .anchors/vllm_ops with empty package ``__init__`` files. The few vllm
modules they import are replaced here by small stand-ins (``install_stand_ins``): ``vllm.triton_utils`` (triton and
tl), ``vllm.platforms.current_platform`` (a CUDA platform: the kernels' CPU fallbacks, which the real platform would
swap in off CUDA, stay out, so the Triton kernels also run under TRITON_INTERPRET=1), ``vllm.envs``,
``vllm._custom_ops`` (unused by the Triton paths), ``vllm.logger``, ``vllm.utils.platform_utils`` and
``vllm.v1.attention.backends.utils`` (PAD_SLOT_ID -1, NULL_BLOCK_ID 0, vllm 0.33's values).
``load()`` returns a namespace of the entry points the layer uses: causal_conv1d_fn, causal_conv1d_update,
selective_state_update (the plain Triton one of mamba_ssm.py, fp32 state), mamba_chunk_scan_combined_varlen,
rms_norm_gated.
"""
import importlib
import logging
import sys
import types
from pathlib import Path

import torch

ANCHOR_DIR = Path(__file__).resolve().parent.parent / ".anchors" / "vllm_ops"
OPS = "vllm.model_executor.layers.mamba.ops"


class _CudaPlatform:
    """What the kernels ask of ``vllm.platforms.current_platform``: a CUDA platform (capabilities from torch)."""

    @staticmethod
    def _capability() -> int:
        if not torch.cuda.is_available():
            return 0
        major, minor = torch.cuda.get_device_capability()
        return 10 * major + minor

    def is_cpu(self) -> bool:
        return False

    def is_xpu(self) -> bool:
        return False

    def is_rocm(self) -> bool:
        return False

    def is_cuda(self) -> bool:
        return torch.cuda.is_available()

    def is_device_capability(self, capability: int) -> bool:
        return self._capability() == capability

    def is_arch_support_pdl(self) -> bool:
        return self._capability() >= 90


class _Logger(logging.LoggerAdapter):
    """vLLM's logger calls: the standard ones plus ``info_once`` / ``warning_once`` (here: every time)."""

    def info_once(self, msg, *args, scope=None, **kwargs):
        self.info(msg, *args, **kwargs)

    def warning_once(self, msg, *args, scope=None, **kwargs):
        self.warning(msg, *args, **kwargs)


def _device_file_name() -> str:
    """The GPU's name as vLLM's tuned-config file names spell it ("NVIDIA_H200"); "cpu" without CUDA (no file)."""
    return torch.cuda.get_device_name().replace(" ", "_") if torch.cuda.is_available() else "cpu"


def _module(name: str, **attrs) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


def install_stand_ins(anchor: Path = ANCHOR_DIR) -> None:
    """Register the stand-in vllm modules and point the ``vllm`` package at the anchor's files."""
    import triton
    import triton.language as tl

    if not (anchor / "vllm" / "model_executor").is_dir():
        raise SystemExit(f"no vLLM kernels under {anchor}: run `bash bench/anchor_setup.sh vllm` first")
    package = _module("vllm")
    package.__path__ = [str(anchor / "vllm")]
    stand_ins = {
        "vllm": package,
        "vllm.triton_utils": _module("vllm.triton_utils", triton=triton, tl=tl, HAS_TRITON=True),
        "vllm.platforms": _module("vllm.platforms", current_platform=_CudaPlatform()),
        "vllm.envs": _module("vllm.envs", VLLM_TUNED_CONFIG_FOLDER=None),
        "vllm._custom_ops": _module("vllm._custom_ops"),
        "vllm.logger": _module("vllm.logger", init_logger=lambda name: _Logger(logging.getLogger(name), {})),
        "vllm.utils": _module("vllm.utils", __path__=[]),
        "vllm.utils.platform_utils": _module(
            "vllm.utils.platform_utils",
            get_device_name_as_file_name=_device_file_name),
        "vllm.v1": _module("vllm.v1", __path__=[]),
        "vllm.v1.attention": _module("vllm.v1.attention", __path__=[]),
        "vllm.v1.attention.backends": _module("vllm.v1.attention.backends", __path__=[]),
        "vllm.v1.attention.backends.utils": _module("vllm.v1.attention.backends.utils", PAD_SLOT_ID=-1,
                                                    NULL_BLOCK_ID=0),
    }
    for name, module in stand_ins.items():
        sys.modules.setdefault(name, module)


def load(anchor: Path = ANCHOR_DIR) -> types.SimpleNamespace:
    """The vLLM kernel entry points the VLLM layer calls (see the module docstring)."""
    install_stand_ins(anchor)
    conv = importlib.import_module(f"{OPS}.causal_conv1d")
    ssd = importlib.import_module(f"{OPS}.ssd_combined")
    return types.SimpleNamespace(
        causal_conv1d_fn=conv.causal_conv1d_fn, causal_conv1d_update=conv.causal_conv1d_update,
        selective_state_update=importlib.import_module(f"{OPS}.mamba_ssm").selective_state_update,
        mamba_chunk_scan_combined_varlen=ssd.mamba_chunk_scan_combined_varlen,
        rms_norm_gated=importlib.import_module(f"{OPS}.layernorm_gated").rms_norm_gated)
