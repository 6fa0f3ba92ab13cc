"""Granite candidate that is correct while it is being validated and wrong afterwards, when it is timed.

It counts calls: the judge's tests' panel takes VALIDATION_CALLS calls for the correctness gauntlet and the
bench-shape validation (test_judge_adversarial.GRANITE_PANEL, rotations=2); later calls return a perturbed output.
"""
from ssmkit.granite.reference import ReferenceMambaLayer

VALIDATION_CALLS = 13


class CandidateBlock(ReferenceMambaLayer):
    calls = 0

    def forward(self, hidden_states, cache=None, attention_mask=None):
        CandidateBlock.calls += 1
        out, cache = super().forward(hidden_states, cache, attention_mask)
        return (out * 1.05 if CandidateBlock.calls > VALIDATION_CALLS else out), cache
