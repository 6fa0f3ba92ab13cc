"""ssmkit: Triton kernels for state-space-model layers, with eager references and a judge.

Tracks: ``ssmkit.granite`` (Granite 4.0-H Mamba-2 mixer, inference) and ``ssmkit.mamba3`` (Mamba-3 SISO varlen
operator, training). Kernels live in ``ssmkit.kernels``; the trusted harness in ``ssmkit.harness``.
"""
__version__ = "0.1.0"
