"""Granite candidate: FastMambaLayer with prefill_address_graphs on (session 48 run 1)."""
from ssmkit.granite.layer import FastMambaLayer


class CandidateBlock(FastMambaLayer):
    def __init__(self, config, layer_idx: int = 0) -> None:
        super().__init__(config, layer_idx)
        self.prefill_address_graphs = True
