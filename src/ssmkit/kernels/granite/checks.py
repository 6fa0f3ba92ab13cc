"""Argument checks shared by the Granite prefill kernel wrappers (clear errors at the public boundary)."""
import torch


def check_shape_device(name: str, t: torch.Tensor, shape: tuple, device: torch.device) -> None:
    """Raise ValueError unless ``t`` has exactly ``shape`` and lives on ``device``."""
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{name}: expected shape {tuple(shape)}, got {tuple(t.shape)}")
    if t.device != device:
        raise ValueError(f"{name}: expected device {device}, got {t.device}")
