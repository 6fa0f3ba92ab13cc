"""Argument checks shared by the Granite kernel wrappers (clear errors at the public boundary)."""
import torch


def check_shape_device(name: str, t: torch.Tensor, shape: tuple, device: torch.device) -> None:
    """Raise ValueError unless ``t`` has exactly ``shape`` and lives on ``device``."""
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{name}: expected shape {tuple(shape)}, got {tuple(t.shape)}")
    if t.device != device:
        raise ValueError(f"{name}: expected device {device}, got {t.device}")


def check(cond: bool, exc: type, msg: str) -> None:
    """Raise ``exc(msg)`` unless ``cond``."""
    if not cond:
        raise exc(msg)


def is_pow2(v: int) -> bool:
    return v > 0 and (v & (v - 1)) == 0
