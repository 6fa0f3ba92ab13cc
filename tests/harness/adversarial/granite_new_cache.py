"""Granite candidate with correct numbers that breaks the cache contract: a call given a cache returns a new cache
object instead of updating the given one in place (callers holding the cache would keep stale states)."""
from ssmkit.granite.reference import ReferenceMambaLayer


class CandidateBlock(ReferenceMambaLayer):
    def forward(self, hidden_states, cache=None, attention_mask=None):
        if cache is not None:
            cache = cache.clone()
        return super().forward(hidden_states, cache, attention_mask)
