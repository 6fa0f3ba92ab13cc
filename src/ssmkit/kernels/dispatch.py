"""Where the Triton kernels run: one predicate for every entry point that chooses kernels or an eager fallback."""
import os

import torch


def kernels_apply(device: torch.device) -> bool:
    """True when tensors on ``device`` run the Triton kernels (CUDA, or CPU under TRITON_INTERPRET=1)."""
    return device.type == "cuda" or (device.type == "cpu" and os.environ.get("TRITON_INTERPRET") == "1")
