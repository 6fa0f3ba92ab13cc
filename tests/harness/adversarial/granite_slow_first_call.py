"""Granite candidate that burns a second or two on its first call only, without touching a clock (a busy loop the
source scan cannot tell from work): the judge's warm-up and medians must make this irrelevant to its timing."""
from ssmkit.granite.reference import ReferenceMambaLayer


class CandidateBlock(ReferenceMambaLayer):
    first = True

    def forward(self, hidden_states, cache=None, attention_mask=None):
        if CandidateBlock.first:
            CandidateBlock.first = False
            for _ in range(30_000_000):
                pass
        return super().forward(hidden_states, cache, attention_mask)
