"""Planted error: the reference layer, then the cached ssm_state scaled by 1.01 in place after every call."""
from ssmkit.granite import ReferenceMambaLayer


class CandidateBlock(ReferenceMambaLayer):
    def forward(self, hidden_states, cache=None, attention_mask=None):
        out, cache = super().forward(hidden_states, cache=cache, attention_mask=attention_mask)
        cache.ssm_state.mul_(1.01)
        return out, cache
