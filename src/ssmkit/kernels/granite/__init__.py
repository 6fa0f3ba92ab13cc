"""Granite 4.0-H Mamba-2 mixer kernels. Prefill: conv1d + SiLU, chunked SSD, gated RMSNorm (this package's
``conv1d``, ``ssd_prefill``, ``gated_norm`` modules); decode: ``ssd_decode``."""
from ssmkit.kernels.granite.conv1d import causal_conv1d_silu_prefill
from ssmkit.kernels.granite.gated_norm import gated_rmsnorm
from ssmkit.kernels.granite.ssd_prefill import ssd_chunked_prefill

__all__ = ["causal_conv1d_silu_prefill", "gated_rmsnorm", "ssd_chunked_prefill"]
