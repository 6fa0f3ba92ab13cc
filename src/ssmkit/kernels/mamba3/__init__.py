"""Triton kernels of the Mamba-3 SISO varlen operator (spec /work/shared/spec/mamba3_siso.md)."""
# ssmkit.mamba3 (whose op module imports the kernels below) must finish initialising before fwd is imported,
# whichever of the two packages is imported first; importing it here first breaks the cycle.
import ssmkit.mamba3  # noqa: F401
from ssmkit.kernels.mamba3.fwd import DEFAULT_FWD_CONFIG, Mamba3FwdConfig, Mamba3FwdSaved, mamba3_siso_fwd

__all__ = ["DEFAULT_FWD_CONFIG", "Mamba3FwdConfig", "Mamba3FwdSaved", "mamba3_siso_fwd"]
