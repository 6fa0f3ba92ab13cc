"""Granite candidate that kills its own process (SIGABRT) on the first call."""
import os

from ssmkit.granite.reference import ReferenceMambaLayer


class CandidateBlock(ReferenceMambaLayer):
    def forward(self, hidden_states, cache=None, attention_mask=None):
        os.abort()
