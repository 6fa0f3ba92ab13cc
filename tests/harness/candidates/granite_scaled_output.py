"""Planted error: the reference layer with every output multiplied by 1.01 (states untouched)."""
from ssmkit.granite import ReferenceMambaLayer


class CandidateBlock(ReferenceMambaLayer):
    def forward(self, hidden_states, cache=None, attention_mask=None):
        out, cache = super().forward(hidden_states, cache=cache, attention_mask=attention_mask)
        return out * 1.01, cache
