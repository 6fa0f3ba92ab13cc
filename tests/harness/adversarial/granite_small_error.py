"""Granite candidate off by a small error: the reference's output scaled by 1.02."""
from ssmkit.granite.reference import ReferenceMambaLayer


class CandidateBlock(ReferenceMambaLayer):
    def forward(self, hidden_states, cache=None, attention_mask=None):
        out, cache = super().forward(hidden_states, cache, attention_mask)
        return out * 1.02, cache
