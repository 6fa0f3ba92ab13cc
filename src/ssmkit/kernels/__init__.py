"""Triton kernels, one kernel family per file: ``ssmkit.kernels.granite`` (Mamba-2 mixer inference) and
``ssmkit.kernels.mamba3`` (Mamba-3 SISO training). Kernels import nothing from the harness."""
