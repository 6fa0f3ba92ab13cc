"""The judge's per-track input sets: what the candidate is given is exactly what the reference ran on."""
import torch

from ssmkit.granite.config import GraniteMambaConfig
from ssmkit.harness.compare import digest_all
from ssmkit.harness.judge import JudgeOptions, _GraniteTrack
from ssmkit.harness.workloads import parse_workload


def test_granite_bench_sets_are_not_changed_by_the_reference_runs():
    track = _GraniteTrack(JudgeOptions(granite_config=GraniteMambaConfig.tiny()), torch.device("cpu"))
    decode = parse_workload({"name": "d", "kind": "decode", "batch": 2, "prefix": 9, "steps": 1, "seed": 3,
                             "purpose": "bench"})
    sets = track.bench_sets(decode, rotations=2)
    assert digest_all(sets[0]["ref"].tensors) != digest_all(sets[1]["ref"].tensors)  # rotated inputs differ
    for s in sets:
        hidden, mask, cache = s["inputs"]
        before = digest_all([hidden, *cache[:2]])
        again = track._single_step(track.ref, s["inputs"], torch.bfloat16, track.readout16)
        assert digest_all(again.tensors) == digest_all(s["ref"].tensors)  # the stored results fit the inputs
        assert digest_all([hidden, *cache[:2]]) == before


def test_granite_bench_prefill_sets_drop_continuations():
    track = _GraniteTrack(JudgeOptions(granite_config=GraniteMambaConfig.tiny()), torch.device("cpu"))
    prefill = parse_workload({"name": "p", "kind": "prefill", "batch": 2, "lengths": [9, 4], "continue": 3,
                              "seed": 4, "purpose": "bench"})
    (s,) = track.bench_sets(prefill, rotations=1)
    assert set(s["ref"].tensors) == {"output", "conv_state", "ssm_state", "logits"}
    assert s["inputs"][0].shape == (2, 9, track.config.hidden_size) and s["inputs"][1] is not None
