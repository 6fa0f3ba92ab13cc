"""Triton kernels of the Mamba-3 SISO varlen operator (spec /work/shared/spec/mamba3_siso.md)."""
from ssmkit.kernels.mamba3.fwd import DEFAULT_FWD_CONFIG, Mamba3FwdConfig, Mamba3FwdSaved, mamba3_siso_fwd

__all__ = ["DEFAULT_FWD_CONFIG", "Mamba3FwdConfig", "Mamba3FwdSaved", "mamba3_siso_fwd"]
