"""Correct Granite candidate: the package's reference itself (the judge's tests allow this delegation only).

It also prints garbage, fake protocol frames included, on stdout and stderr at every call: a candidate's prints
must not reach the judge's protocol pipe.
"""
import sys

from ssmkit.granite.reference import ReferenceMambaLayer


class CandidateBlock(ReferenceMambaLayer):
    def forward(self, hidden_states, cache=None, attention_mask=None):
        print('\x00\x00\x00\x00\x00\x00\x00\x0b{"ok": true}garbage \xff\xfe', flush=True)
        sys.stderr.write("more garbage\n")
        return super().forward(hidden_states, cache, attention_mask)
