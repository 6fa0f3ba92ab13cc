"""Granite candidate: the package's FastMambaLayer (Triton kernels, fused CUDA-graphed decode)."""
from ssmkit.granite.layer import FastMambaLayer as CandidateBlock

__all__ = ["CandidateBlock"]
