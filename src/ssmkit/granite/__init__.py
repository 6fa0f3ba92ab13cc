"""Granite 4.0-H Mamba-2 mixer (inference): config, cache, eager reference layer, readout, layer slices.

Contract: /work/shared/spec/granite_mamba2.md. Public names are listed in ``__all__``.
"""
from ssmkit.granite.cache import MambaCache
from ssmkit.granite.checkpoint import LayerSlice, extract_slice, load_slice, save_slice, synthetic_slice
from ssmkit.granite.config import GraniteMambaConfig
from ssmkit.granite.layer import FastMambaLayer
from ssmkit.granite.readout import readout_logits
from ssmkit.granite.reference import ReferenceMambaLayer

__all__ = [
    "GraniteMambaConfig",
    "MambaCache",
    "ReferenceMambaLayer",
    "FastMambaLayer",
    "readout_logits",
    "LayerSlice",
    "synthetic_slice",
    "load_slice",
    "save_slice",
    "extract_slice",
]
