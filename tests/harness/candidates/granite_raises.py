"""Broken candidate: every forward raises."""
from ssmkit.granite import ReferenceMambaLayer


class CandidateBlock(ReferenceMambaLayer):
    def forward(self, hidden_states, cache=None, attention_mask=None):
        raise RuntimeError("planted failure")
