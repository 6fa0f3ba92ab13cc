"""The judge's per-track input sets: what the candidate is given is exactly what the reference ran on."""
import torch

from ssmkit.granite.config import GraniteMambaConfig
from ssmkit.harness.compare import digest_all
from ssmkit.harness.judge import JudgeOptions, _GraniteTrack
from ssmkit.harness.workloads import parse_workload


def test_granite_bench_sets_are_not_changed_by_the_reference_runs():
    options = JudgeOptions(granite_config=GraniteMambaConfig.tiny())
    track = _GraniteTrack(options, torch.device("cpu"))
    decode = parse_workload({"name": "d", "kind": "decode", "batch": 2, "prefix": 9, "steps": 1, "seed": 3,
                             "purpose": "bench"})
    prefill = parse_workload({"name": "p", "kind": "prefill", "batch": 2, "lengths": [9, 4], "seed": 4,
                              "purpose": "bench"})
    for workload in (decode, prefill):
        sets = track.bench_sets(workload, rotations=2)
        assert digest_all(sets[0]["ref"]) != digest_all(sets[1]["ref"])  # rotated inputs differ
        for s in sets:
            hidden, mask, cache = s["inputs"]
            before = digest_all([hidden, mask, *(cache[:2] if cache else ())])
            again, _ = track.run_reference(track.ref, s["inputs"], torch.bfloat16)
            assert digest_all(again) == digest_all(s["ref"])  # the stored reference belongs to the stored inputs
            assert digest_all([hidden, mask, *(cache[:2] if cache else ())]) == before
