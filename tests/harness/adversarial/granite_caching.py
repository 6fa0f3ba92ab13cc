"""Granite candidate that caches its outputs between calls, keyed by input shape: fast on repeated calls, and
wrong as soon as the inputs change but the shape does not (rotated input sets)."""
from ssmkit.granite.cache import MambaCache
from ssmkit.granite.reference import ReferenceMambaLayer


class CandidateBlock(ReferenceMambaLayer):
    def __init__(self, config, layer_idx=0):
        super().__init__(config, layer_idx)
        self.memo = {}

    def forward(self, hidden_states, cache=None, attention_mask=None):
        key = (tuple(hidden_states.shape), cache is None)
        if key not in self.memo:
            out, new_cache = super().forward(hidden_states, cache, attention_mask)
            self.memo[key] = (out.clone(), new_cache.conv_state.clone(), new_cache.ssm_state.clone())
            return out, new_cache
        out, conv, ssm = self.memo[key]
        if cache is None:
            cache = MambaCache(conv_state=conv.clone(), ssm_state=ssm.clone(), has_previous_state=True,
                               seqlen_offset=hidden_states.shape[1])
        else:
            cache.conv_state.copy_(conv)
            cache.ssm_state.copy_(ssm)
            cache.seqlen_offset += hidden_states.shape[1]
        return out.clone(), cache
