"""Granite candidate that sleeps on its first call only (to skew a judge that times or warms up naively)."""
import time

from ssmkit.granite.reference import ReferenceMambaLayer


class CandidateBlock(ReferenceMambaLayer):
    first = True

    def forward(self, hidden_states, cache=None, attention_mask=None):
        if CandidateBlock.first:
            CandidateBlock.first = False
            time.sleep(2.0)
        return super().forward(hidden_states, cache, attention_mask)
