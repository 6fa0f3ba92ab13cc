"""mask_row_facts (kernels/granite/mask_facts.py) under the interpreter equals the eager mask_facts of the
reference on random masks of every dtype: left-padded, right-padded, holes, non-binary values, NaN, empty rows,
strided views, and rows longer than one block."""
import pytest
import torch

from ssmkit.granite.reference import mask_facts
from ssmkit.kernels.granite.mask_facts import PendingMaskFacts, mask_row_facts

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16,
          torch.float32, torch.float64]


def _masks(g: torch.Generator, seqlen: int) -> dict[str, torch.Tensor]:
    lengths = torch.randint(0, seqlen + 1, (3,), generator=g).tolist()
    left = torch.stack([torch.arange(seqlen) >= seqlen - n for n in lengths]).long()
    right = left.flip(1)
    holes = torch.ones(3, seqlen, dtype=torch.long)
    holes[0, seqlen // 2] = 0  # a pad after a real token (for seqlen >= 2)
    return {"left": left, "full": torch.ones(3, seqlen, dtype=torch.long), "right": right, "holes": holes,
            "empty": torch.zeros(3, seqlen, dtype=torch.long)}


@pytest.mark.parametrize("seqlen", [1, 5, 1030])
@pytest.mark.parametrize("dtype", DTYPES)
def test_mask_row_facts_equals_eager_facts(dtype, seqlen):
    g = torch.Generator().manual_seed(seqlen)
    for name, m in _masks(g, seqlen).items():
        m = m.to(DEVICE, dtype)
        want = mask_facts(m)
        assert mask_row_facts(m) == (want.lengths, want.binary, want.left_padded), (name, dtype)


BAD_VALUES = {torch.int64: [2, -1], torch.float32: [2.0, -1.0, 0.5, float("nan"), float("inf"), -float("inf")],
              torch.bfloat16: [2.0, 0.5, float("nan")], torch.float64: [0.5, 1e-30, 1 + 1e-12, float("nan")]}


@pytest.mark.parametrize("dtype", list(BAD_VALUES))
def test_mask_row_facts_flags_values_other_than_0_and_1(dtype):
    for bad in BAD_VALUES[dtype]:
        x = torch.ones(2, 7, dtype=dtype, device=DEVICE)
        x[1, 3] = bad
        assert mask_row_facts(x)[1] is False, (dtype, bad)
        assert mask_facts(x).binary is False, (dtype, bad)


def test_mask_row_facts_reads_strided_views():
    base = torch.ones(4, 12, dtype=torch.long, device=DEVICE)
    base[:, :5] = 0
    view = base[::2, 1::2]  # strides (24, 2)
    want = mask_facts(view.contiguous())
    assert mask_row_facts(view) == (want.lengths, want.binary, want.left_padded)


def test_negative_zero_is_a_pad():
    """-0.0 == 0: a pad, as in the eager check."""
    m = torch.tensor([[-0.0, 1.0, 1.0], [-0.0, -0.0, 1.0]], device=DEVICE)
    want = mask_facts(m)
    assert mask_row_facts(m) == (want.lengths, want.binary, want.left_padded) == ((2, 1), True, True)


def test_unsupported_dtypes_are_refused():
    for dtype in (torch.uint16, torch.complex64):
        with pytest.raises(ValueError, match="mask must be a"):
            mask_row_facts(torch.ones(2, 3, dtype=dtype, device=DEVICE))


def test_pending_mask_facts_equal_mask_row_facts(monkeypatch):
    """PendingMaskFacts: the same facts as mask_row_facts, also with several pending at once and on a second
    ``result()``; on CUDA the mask as the current stream left it at the construction (written there behind a long
    kernel), read after more work was queued there."""
    import ssmkit.kernels.granite.mask_facts as mask_facts_module

    g = torch.Generator().manual_seed(7)
    masks = [m.to(DEVICE) for m in _masks(g, 1030).values()]
    want = [mask_row_facts(m) for m in masks]
    launched_on = []  # CUDA: the stream each read's kernel was launched on
    real_launch = mask_facts_module._launch_mask_facts

    def spy_launch(m):
        launched_on.append(torch.cuda.current_stream() if m.is_cuda else None)
        return real_launch(m)

    monkeypatch.setattr(mask_facts_module, "_launch_mask_facts", spy_launch)
    late = torch.zeros_like(masks[1])
    if DEVICE == "cuda":
        torch.cuda._sleep(20_000_000)  # ~10 ms before the write
    late.copy_(masks[1])
    pending = [PendingMaskFacts(m) for m in [*masks, late]]
    if DEVICE == "cuda":
        torch.cuda._sleep(20_000_000)  # queued after the construction, before the reads
    assert [p.result() for p in pending] == [*want, want[1]]
    assert pending[0].result() == want[0] and len(launched_on) == len(pending)
    if DEVICE == "cuda":  # on the side stream, not the caller's
        assert all(s != torch.cuda.current_stream() for s in launched_on)
    with pytest.raises(ValueError, match="mask must be"):
        PendingMaskFacts(masks[0][None]).result()
