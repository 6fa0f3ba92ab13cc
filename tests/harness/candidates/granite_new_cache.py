"""Contract break: correct numbers, but a continuing call returns a NEW cache instead of updating the given one."""
from ssmkit.granite import ReferenceMambaLayer


class CandidateBlock(ReferenceMambaLayer):
    def forward(self, hidden_states, cache=None, attention_mask=None):
        if cache is not None:
            cache = cache.clone()
        return super().forward(hidden_states, cache=cache, attention_mask=attention_mask)
