"""readout_logits: transformers' final RMSNorm on the last position, then an fp32 matmul with the embedding / 6."""
import pytest
import torch

from granite_testlib import max_rel_err
from ssmkit.granite import readout_logits

HIDDEN, VOCAB = 1536, 512


def _inputs(seed, b=3, length=4):
    gen = torch.Generator().manual_seed(seed)
    out = (torch.randn(b, length, HIDDEN, generator=gen) * 0.7).bfloat16()
    norm = (1 + 0.1 * torch.randn(HIDDEN, generator=gen)).bfloat16()
    emb = (0.02 * torch.randn(VOCAB, HIDDEN, generator=gen)).bfloat16()
    return out, norm, emb


def test_readout_is_transformers_rmsnorm_then_fp32_logits():
    from transformers.models.granitemoehybrid.modeling_granitemoehybrid import GraniteMoeHybridRMSNorm

    out, norm, emb = _inputs(1)
    hf_norm = GraniteMoeHybridRMSNorm(HIDDEN, eps=1e-5).bfloat16()
    with torch.no_grad():
        hf_norm.weight.copy_(norm)
        normed = hf_norm(out[:, -1])
    logits = readout_logits(out, norm, emb, logits_scaling=6.0, eps=1e-5)
    assert logits.dtype == torch.float32 and logits.shape == (3, VOCAB)
    assert torch.equal(logits, (normed.float() @ emb.float().T) / 6.0)
    want = (normed.double() @ emb.double().T) / 6.0
    assert max_rel_err(logits, want) < 1e-5  # fp32 accumulation of 1536 products


def test_readout_uses_only_the_last_position():
    out, norm, emb = _inputs(2)
    base = readout_logits(out, norm, emb)
    earlier = out.clone()
    earlier[:, :-1] = torch.randn_like(earlier[:, :-1].float()).bfloat16()
    assert torch.equal(readout_logits(earlier, norm, emb), base)
    last = out.clone()
    last[:, -1] = torch.randn_like(last[:, -1].float()).bfloat16()
    assert (readout_logits(last, norm, emb) - base).abs().max() > 1e-2


def test_readout_scaling_and_eps_are_applied():
    out, norm, emb = _inputs(3)
    assert torch.allclose(readout_logits(out, norm, emb, logits_scaling=3.0),
                          2 * readout_logits(out, norm, emb, logits_scaling=6.0), rtol=0, atol=0)
    tiny = torch.full((1, 1, HIDDEN), 1e-3).bfloat16()
    # eps dominates the mean square of a 1e-3 vector: a bigger eps shrinks the normalised value.
    big = readout_logits(tiny, norm, emb, eps=1.0).abs().max()
    small = readout_logits(tiny, norm, emb, eps=1e-5).abs().max()
    assert big < 0.01 * small


@pytest.mark.parametrize("args, exc, match", [
    ((torch.zeros(2, HIDDEN), torch.ones(HIDDEN), torch.zeros(4, HIDDEN)), ValueError, "layer_output must have rank 3"),
    ((torch.zeros(1, 2, HIDDEN), torch.ones(8), torch.zeros(4, HIDDEN)), ValueError, "hidden sizes disagree"),
    ((torch.zeros(1, 2, HIDDEN), torch.ones(HIDDEN), torch.zeros(4, 8)), ValueError, "hidden sizes disagree"),
    ((torch.zeros(1, 0, HIDDEN), torch.ones(HIDDEN), torch.zeros(4, HIDDEN)), ValueError, "no positions"),
    (("x", torch.ones(HIDDEN), torch.zeros(4, HIDDEN)), TypeError, "torch.Tensor"),
])
def test_readout_rejects_bad_input(args, exc, match):
    with pytest.raises(exc, match=match):
        readout_logits(*args)


def test_readout_rejects_bad_scaling():
    with pytest.raises(ValueError, match="logits_scaling"):
        readout_logits(torch.zeros(1, 1, 4), torch.ones(4), torch.zeros(3, 4), logits_scaling=0.0)
