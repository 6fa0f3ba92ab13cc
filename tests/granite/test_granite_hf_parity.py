"""ReferenceMambaLayer against transformers 5.17.0's GraniteMoeHybridMambaLayer (CPU, eval, same weights).

transformers runs its pure-PyTorch fallbacks here (no mamba_ssm / causal_conv1d), the path the spec's semantics
are taken from. It gets its own DynamicCache and the mask its model would build (create_recurrent_attention_mask).

Compared: layer outputs, conv_state, ssm_state (transformers' DynamicCache layer 0) and, in fp32, the readout
logits of both outputs (readout_logits with a small random final norm and embedding).

What may differ, and the bounds used:
- float32 runs: only the fp32 summation order inside the chunked SSD (we contract with einsums, transformers sums
  elementwise products). Every quantity: max error / max value < FP32_TOL = 1e-5 (observed ~1e-7).
- bfloat16 runs: everything before the SSD is the same op on the same bf16 values, so conv_state is bitwise equal
  and ssm_state (fp32) obeys FP32_TOL. After the SSD the fp32 result is rounded to bf16 for out_proj: a summation-
  order difference can flip that rounding by one ulp, so the out_proj input u may differ by <= 1 bf16 ulp per
  element, plus FP32_TOL·max|u| for values near zero after cancellation (almost all elements are identical),
  and the output by at most |W_out|·|Δu| + 1 ulp of the output (+ fp32 accumulation slack). A decode step started from the SAME state is the same sequence of ops: bitwise equal.
"""
import pytest
import torch

from granite_testlib import (FP32_EPS, HFMixer, bf16_ulp, left_padding_mask, make_layer, max_rel_err,
                             random_hidden, record_out_proj_input)
from ssmkit.granite import GraniteMambaConfig, readout_logits, synthetic_slice

pytest.importorskip("transformers")

FP32_TOL = 1e-5
MIN_IDENTICAL_FRACTION = 0.99


def _assert_bf16_close(ours_u, hf_u, ours_out, hf_out, out_weight):
    """Both sides rounded the same fp32 values (up to summation order) to bf16, then ran out_proj."""
    du = (ours_u.float() - hf_u.float()).abs()
    # One rounding flip, or (near zero, after cancellation) the fp32 summation-order difference itself.
    allowed = bf16_ulp(hf_u) + FP32_TOL * hf_u.float().abs().max()
    assert torch.all(du <= allowed), f"out_proj input differs by more than 1 bf16 ulp: {du.max()}"
    assert (du == 0).float().mean() >= MIN_IDENTICAL_FRACTION
    w = out_weight.float().abs()
    bound = du @ w.T + 64 * FP32_EPS * (hf_u.float().abs() @ w.T)
    bound = bound + bf16_ulp(torch.maximum(ours_out.float().abs(), hf_out.float().abs()))
    assert torch.all((ours_out.float() - hf_out.float()).abs() <= bound)


def _run_fp32_scenario(config, lengths, plan, seed):
    """Prefill (left padded), then the calls in ``plan`` (token counts) from the cache, each compared."""
    layer = make_layer(config, torch.float32, seed)
    hf = HFMixer(layer)
    b, length = len(lengths), max(lengths)
    mask = left_padding_mask(lengths, length)
    h = random_hidden(b, length, config.hidden_size, torch.float32, seed)
    with torch.no_grad():
        out, cache = layer(h, attention_mask=mask)
    steps = [(out, *hf.step(h, mask))]
    compared = [cache.clone()]
    for i, n in enumerate(plan):
        h = random_hidden(b, n, config.hidden_size, torch.float32, seed + 1 + i)
        with torch.no_grad():
            out, _ = layer(h, cache)
        steps.append((out, *hf.step(h)))
        compared.append(cache.clone())
    readout = synthetic_slice(config, seed)  # small random final norm and embedding (vocab 128)
    for (out, hf_out, hf_conv, hf_ssm), ours in zip(steps, compared):
        assert max_rel_err(out, hf_out) < FP32_TOL
        logits, hf_logits = (readout_logits(o, readout.final_norm.float(), readout.embedding.float(),
                                            config.logits_scaling, config.rms_norm_eps) for o in (out, hf_out))
        assert max_rel_err(logits, hf_logits) < FP32_TOL
        assert max_rel_err(ours.conv_state, hf_conv) < FP32_TOL
        assert max_rel_err(ours.ssm_state, hf_ssm) < FP32_TOL
        assert hf_ssm.dtype == torch.float32 and ours.ssm_state.dtype == torch.float32


@pytest.mark.parametrize("overrides", [{}, {"n_groups": 2}, {"time_step_limit": (0.0, 0.02)},
                                       {"proj_bias": True, "conv_bias": False}])
def test_tiny_fp32_matches_transformers_prefill_decode_continuation(overrides):
    config = GraniteMambaConfig.tiny(**overrides)
    _run_fp32_scenario(config, lengths=[19, 8, 1], plan=[1, 1, 11, 1, 2, 1], seed=21)


def _run_bf16_scenario(config, lengths, continuation, decode_steps, seed):
    layer = make_layer(config, torch.bfloat16, seed)
    hf = HFMixer(layer)
    ours_u = record_out_proj_input(layer)
    w_out = layer.out_proj.weight.detach()
    b, length = len(lengths), max(lengths)
    mask = left_padding_mask(lengths, length)
    h = random_hidden(b, length, config.hidden_size, torch.bfloat16, seed)

    with torch.no_grad():
        out, cache = layer(h, attention_mask=mask)
    hf_out, hf_conv, hf_ssm = hf.step(h, mask)
    assert torch.equal(cache.conv_state, hf_conv) and cache.conv_state.dtype == torch.bfloat16
    assert max_rel_err(cache.ssm_state, hf_ssm) < FP32_TOL
    _assert_bf16_close(ours_u["u"], hf.last_out_proj_input, out, hf_out, w_out)
    assert torch.all(out[mask == 0] == 0) and torch.all(hf_out[mask == 0] == 0)

    for step in range(decode_steps):  # each step from transformers' state: the same ops, bitwise
        cache.ssm_state.copy_(hf_ssm)
        h = random_hidden(b, 1, config.hidden_size, torch.bfloat16, seed + 10 + step)
        with torch.no_grad():
            out, _ = layer(h, cache)
        hf_out, hf_conv, hf_ssm = hf.step(h)
        assert torch.equal(out, hf_out)
        assert torch.equal(cache.conv_state, hf_conv) and torch.equal(cache.ssm_state, hf_ssm)

    cache.ssm_state.copy_(hf_ssm)
    h = random_hidden(b, continuation, config.hidden_size, torch.bfloat16, seed + 99)
    with torch.no_grad():
        out, _ = layer(h, cache)
    hf_out, hf_conv, hf_ssm = hf.step(h)
    assert torch.equal(cache.conv_state, hf_conv)
    assert max_rel_err(cache.ssm_state, hf_ssm) < FP32_TOL
    _assert_bf16_close(ours_u["u"], hf.last_out_proj_input, out, hf_out, w_out)


def test_tiny_bf16_matches_transformers_prefill_decode_continuation():
    _run_bf16_scenario(GraniteMambaConfig.tiny(), lengths=[19, 8, 1, 17], continuation=11, decode_steps=3, seed=31)


def test_real_config_bf16_matches_transformers_prefill_decode_continuation():
    """Real sizes (48 heads x 64, N=128, chunk 256); rows of 200 and 37 real tokens, one chunk each call."""
    _run_bf16_scenario(GraniteMambaConfig(), lengths=[200, 37], continuation=60, decode_steps=2, seed=41)
