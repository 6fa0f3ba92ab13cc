"""Granite candidate that reaches into the judge's internals (its worker module)."""
from ssmkit.harness import worker
from ssmkit.granite.layer import FastMambaLayer as CandidateBlock  # noqa: F401

worker.TRACKS = ()
