"""Granite candidate that is exact at short lengths and wrong only beyond LARGE tokens: only the judge's
validation of the timed path at the benchmark shapes reaches them (the tests' bench workloads are longer)."""
from ssmkit.granite.reference import ReferenceMambaLayer

LARGE = 32


class CandidateBlock(ReferenceMambaLayer):
    def forward(self, hidden_states, cache=None, attention_mask=None):
        out, cache = super().forward(hidden_states, cache, attention_mask)
        if hidden_states.shape[1] > LARGE:
            out = out * 1.05
        return out, cache
