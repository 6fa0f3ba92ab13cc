"""Correct Granite candidate: the package's reference itself (the judge's tests allow this delegation only)."""
from ssmkit.granite.reference import ReferenceMambaLayer as CandidateBlock  # noqa: F401
