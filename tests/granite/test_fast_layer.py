"""FastMambaLayer against ReferenceMambaLayer: prefill, left padding, continuation, decode steps, fallback.

Each scenario runs three layers on the same weights and inputs: the bf16 reference, the bf16 fast layer and the
float32 reference ("truth", the same math in fp32). The fast layer passes a quantity when its error against the
truth is within the harness's calibrated bound of the reference's own error (``calibrated_checks``). On the CPU
the kernels run in Triton's interpreter (tests/conftest.py sets TRITON_INTERPRET=1; ``ssmkit.kernels`` patches its
bf16 dots and casts to compute what the GPU computes).
"""
import copy
import os
import pickle
import threading
import warnings

import pytest
import torch

from ssmkit.granite.cache import MambaCache
from ssmkit.granite.checkpoint import synthetic_slice
from ssmkit.granite.config import GraniteMambaConfig
from ssmkit.granite.layer import FastMambaLayer
from ssmkit.granite.reference import ReferenceMambaLayer
from ssmkit.harness.compare import calibrated_checks

BF16 = torch.bfloat16
# Tests of the kernel paths on CPU tensors (the interpreter): on a CUDA machine the layer falls back to the
# reference for CPU tensors, so what they check (the kernel path is taken) does not apply there.
INTERPRETER_ONLY = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1",
                                      reason="kernel paths on CPU tensors (TRITON_INTERPRET=1)")


class Trio:
    """bf16 reference, bf16 fast layer and fp32 reference on one synthetic slice, each with its own cache."""

    def __init__(self, config: GraniteMambaConfig, seed: int) -> None:
        weights = synthetic_slice(config, seed).mamba
        self.ref = ReferenceMambaLayer(config).to(BF16)
        self.fast = FastMambaLayer(config).to(BF16)
        self.truth = ReferenceMambaLayer(config).float()
        for layer in (self.ref, self.fast, self.truth):
            layer.load_state_dict(weights)
        self.caches = {"ref": None, "fast": None, "truth": None}
        self.gen = torch.Generator().manual_seed(seed + 1)

    def step(self, batch: int, length: int, mask: torch.Tensor | None = None, label: str = "") -> None:
        """One forward of every layer on fresh random inputs; checks outputs and both cache tensors."""
        h = torch.randn(batch, length, self.fast.config.hidden_size, generator=self.gen).to(BF16)
        if mask is not None:
            h = h * mask[:, :, None].to(BF16)  # pad positions carry no signal, as the model would give
        outs = {}
        for name, layer, x in (("ref", self.ref, h), ("fast", self.fast, h), ("truth", self.truth, h.float())):
            cache_in = self.caches[name]
            with torch.no_grad():
                outs[name], cache = layer(x, cache_in, mask)
            if cache_in is not None:
                assert cache is cache_in, f"{name}: forward must return the cache it was given"
            self.caches[name] = cache
        assert outs["fast"].shape == outs["ref"].shape and outs["fast"].dtype == BF16
        f, r, t = (self.caches[k] for k in ("fast", "ref", "truth"))
        assert f.seqlen_offset == r.seqlen_offset and f.has_previous_state
        checks = (calibrated_checks(label, "output", outs["fast"], outs["ref"], outs["truth"])
                  + calibrated_checks(label, "conv_state", f.conv_state, r.conv_state, t.conv_state)
                  + calibrated_checks(label, "ssm_state", f.ssm_state, r.ssm_state, t.ssm_state))
        bad = [c.as_dict() for c in checks if not c.ok]
        assert not bad, bad


def left_pad_mask(lengths: list[int]) -> torch.Tensor:
    width = max(lengths)
    return torch.tensor([[0] * (width - n) + [1] * n for n in lengths], dtype=torch.long)


@pytest.fixture(scope="module")
def tiny():
    return GraniteMambaConfig.tiny()  # chunk 8: lengths below cross chunk boundaries


@pytest.mark.parametrize("length", [1, 2, 3, 8, 9, 21])
def test_fast_prefill_matches_reference(tiny, length):
    trio = Trio(tiny, seed=length)
    trio.step(2, length, label=f"prefill L={length}")


def test_fast_left_padded_prefill_then_decode_matches_reference(tiny):
    lengths = [19, 8, 1]
    trio = Trio(tiny, seed=5)
    trio.step(3, 19, mask=left_pad_mask(lengths), label="padded prefill")
    for i in range(4):
        trio.step(3, 1, label=f"decode {i}")


@pytest.mark.parametrize("fused", [False, True])
def test_fast_prefill_with_each_ssd_state_form_matches_reference(tiny, fused):
    """ssd_fused_state forced either way (the tiny config's batches are below the default's threshold): a
    left-padded prefill, a continuation and a decode step keep the reference's accuracy."""
    trio = Trio(tiny, seed=41)
    trio.fast.ssd_fused_state = fused
    trio.step(3, 19, mask=left_pad_mask([19, 8, 1]), label=f"padded prefill (fused state {fused})")
    trio.step(3, 5, label="continuation")
    trio.step(3, 1, label="decode")


@pytest.mark.parametrize("cont", [2, 3, 8, 13])
def test_fast_continuation_matches_reference(tiny, cont):
    trio = Trio(tiny, seed=10 + cont)
    trio.step(2, 11, label="prefill")
    trio.step(2, cont, label=f"continuation L={cont}")
    trio.step(2, 1, label="decode after continuation")


@pytest.mark.parametrize("mode,batch", [("triton", 2), ("triton", 3), ("triton", 9), ("auto", 1), ("auto", 3),
                                        ("cublas", 1)])
def test_fast_decode_projections_match_reference(tiny, mode, batch):
    """Every decode_projections mode keeps the reference's accuracy: "triton" (skinny GEMMs for both projections),
    "auto" (in_proj on the split-K kernel, out_proj on the GEMV up to batch 2 and on the split-K kernel above),
    "cublas"."""
    trio = Trio(tiny, seed=31)
    trio.fast.decode_projections = mode
    trio.step(batch, 6, label="prefill")
    for i in range(2):
        trio.step(batch, 1, label=f"decode {i} ({mode} projections)")


@INTERPRETER_ONLY
@pytest.mark.parametrize("mode,batch,want", [("auto", 1, ["in:splitk", "out:gemv"]),
                                             ("auto", 2, ["in:splitk", "out:gemv"]),
                                             ("auto", 3, ["in:splitk", "out:splitk"]),
                                             ("auto", 9, ["in:splitk", "out:splitk"]),
                                             ("triton", 3, ["in:gemv", "out:gemv"]),
                                             ("triton", 9, ["in:splitk", "out:splitk"]), ("cublas", 1, [])])
def test_fast_decode_projection_routing(tiny, monkeypatch, mode, batch, want):
    """Which decode projections take ``granite_decode_linear``, with which kernel: "auto" the split-K kernel for
    in_proj, for out_proj the GEMV up to batch 2 and the split-K kernel above; "triton" both, the GEMV up to 8
    rows; "cublas" none."""
    import ssmkit.granite.layer as layer_module
    seen = []
    real = layer_module.granite_decode_linear

    def spy(x, w, **kw):
        seen.append(("in" if w is layer.in_proj.weight else "out") + ":" + kw["kernel"])
        return real(x, w, **kw)
    monkeypatch.setattr(layer_module, "granite_decode_linear", spy)
    layer = FastMambaLayer(tiny).to(BF16)
    layer.load_state_dict(synthetic_slice(tiny, 3).mamba)
    layer.decode_projections = mode
    g = torch.Generator().manual_seed(6)
    with torch.no_grad():
        _, cache = layer(torch.randn(batch, 3, tiny.hidden_size, generator=g).to(BF16))
        seen.clear()
        layer(torch.randn(batch, 1, tiny.hidden_size, generator=g).to(BF16), cache)
    assert seen == want


@INTERPRETER_ONLY
def test_fast_decode_rejects_unknown_projections(tiny):
    """(CPU tensors reach the decode kernels, and so ``_projection_args``, only under the interpreter; elsewhere the
    layer falls back to the reference.)"""
    layer = FastMambaLayer(tiny).to(BF16)
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        _, cache = layer(torch.randn(1, 3, tiny.hidden_size, generator=g).to(BF16))
        layer.decode_projections = "cutlass"
        with pytest.raises(ValueError, match="decode_projections must be one of"):
            layer(torch.randn(1, 1, tiny.hidden_size, generator=g).to(BF16), cache)


def test_fast_decode_updates_cache_in_place(tiny):
    layer = FastMambaLayer(tiny).to(BF16)
    layer.load_state_dict(synthetic_slice(tiny, 3).mamba)
    g = torch.Generator().manual_seed(4)
    with torch.no_grad():
        _, cache = layer(torch.randn(2, 5, tiny.hidden_size, generator=g).to(BF16))
        conv, ssm = cache.conv_state, cache.ssm_state
        before = (conv.clone(), ssm.clone())
        out, same = layer(torch.randn(2, 1, tiny.hidden_size, generator=g).to(BF16), cache)
    assert same is cache and cache.conv_state is conv and cache.ssm_state is ssm
    assert cache.seqlen_offset == 6 and out.shape == (2, 1, tiny.hidden_size)
    assert not torch.equal(conv, before[0]) and not torch.equal(ssm, before[1])


@INTERPRETER_ONLY
def test_fast_decode_float32_matches_float32_reference(tiny):
    """With fp32 weights both layers do the same math in fp32: far tighter than any bf16 tolerance."""
    weights = synthetic_slice(tiny, 6).mamba
    ref, fast = ReferenceMambaLayer(tiny).float(), FastMambaLayer(tiny).float()
    ref.load_state_dict(weights)
    fast.load_state_dict(weights)
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        h = torch.randn(2, 6, tiny.hidden_size, generator=g)
        _, rc = ref(h)
        with pytest.warns(RuntimeWarning, match="prefill kernels support torch.bfloat16"):
            _, fc = fast(h)
        for _ in range(3):
            h = torch.randn(2, 1, tiny.hidden_size, generator=g)
            ro, _ = ref(h, rc)
            fo, _ = fast(h, fc)
            for a, b in ((fo, ro), (fc.ssm_state, rc.ssm_state), (fc.conv_state, rc.conv_state)):
                assert ((a - b).norm() / b.norm()).item() < 1e-5


def test_fast_real_config_prefill_and_decode_match_reference():
    """The real mixer sizes (48 heads x 64, d_state 128, conv 3328) on a few tokens. Chunk 16 instead of 256 and a
    small (unused) vocab keep the interpreter to seconds; the decode kernels do not depend on the chunk."""
    trio = Trio(GraniteMambaConfig(vocab_size=128, chunk_size=16), seed=21)
    trio.step(2, 5, mask=left_pad_mask([5, 3]), label="real prefill")
    trio.step(2, 1, label="real decode")  # one step: each costs seconds in the interpreter at these sizes


def test_fast_layer_falls_back_with_one_warning_without_interpreter(tiny, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    if torch.cuda.is_available():
        pytest.skip("the fallback is for non-CUDA tensors; this machine has CUDA")
    weights = synthetic_slice(tiny, 8).mamba
    ref, fast = ReferenceMambaLayer(tiny).to(BF16), FastMambaLayer(tiny).to(BF16)
    ref.load_state_dict(weights)
    fast.load_state_dict(weights)
    h = torch.randn(2, 4, tiny.hidden_size).to(BF16)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fo, fc = fast(h)
        fast(h[:, :1], fc)
        ro, _ = ref(h)
    assert torch.equal(fo, ro)
    fallbacks = [w for w in caught if "falls back to the reference" in str(w.message)]
    assert len(fallbacks) == 1 and issubclass(fallbacks[0].category, RuntimeWarning)


def test_fast_layer_rejects_bad_input_like_reference(tiny):
    fast = FastMambaLayer(tiny).to(BF16)
    with pytest.raises(ValueError, match="hidden_size"):
        fast(torch.randn(1, 3, tiny.hidden_size + 1).to(BF16))
    with pytest.raises(TypeError, match="dtype"):
        fast(torch.randn(1, 3, tiny.hidden_size))
    cache = MambaCache.zeros(tiny, 2, dtype=BF16)
    with pytest.raises(ValueError, match="batch"):
        fast(torch.randn(1, 1, tiny.hidden_size).to(BF16), cache)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
@pytest.mark.parametrize("batch", [2, 3])  # "mapped" at 2: the fetch acknowledges and the GEMV writes the output
@pytest.mark.parametrize("decode_io", ["mapped", "copy"])
def test_fast_decode_cuda_graph_matches_eager_and_returns_fresh_outputs(decode_io, batch):
    """The graph step equals the eager step bit for bit (outputs and states), a new cache object gets its own
    graph, outputs already returned survive later calls, a non-contiguous token works, and 40 steps queued
    without a synchronisation (the "mapped" table is reused while earlier replays may still be pending) give the
    eager results, at a batch whose out_proj writes the posted output itself (2) and one with a copy-out (3).
    (Chunk 16: the GPU's tl.dot tiles need >= 16.)"""
    tiny = GraniteMambaConfig.tiny(chunk_size=16)
    fast = FastMambaLayer(tiny).to("cuda", BF16)
    fast.load_state_dict(synthetic_slice(tiny, 9).mamba)
    fast.decode_io = decode_io
    g = torch.Generator().manual_seed(10)
    toks = [torch.randn(batch, 1, tiny.hidden_size, generator=g).to("cuda", BF16) for _ in range(3)]
    toks.append(torch.randn(batch, 2, tiny.hidden_size, generator=g).to("cuda", BF16)[:, 1:])  # not contiguous
    queued = [torch.randn(batch, 1, tiny.hidden_size, generator=g).to("cuda", BF16) for _ in range(40)]
    with torch.no_grad():
        _, cache = fast(torch.randn(batch, 7, tiny.hidden_size, generator=g).to("cuda", BF16))
        eager_cache, other = cache.clone(), cache.clone()
        fast.use_cuda_graphs = False
        eager = [fast(t, eager_cache)[0] for t in toks + queued]
        fast.use_cuda_graphs = True
        graph = [fast(t, cache)[0] for t in toks]
        torch.cuda.synchronize()
        torch.cuda._sleep(50_000_000)  # the GPU busy for ~25 ms: the queued steps' posts must wait for their acks
        graph += [fast(t, cache)[0] for t in queued]  # no synchronisation between the steps
        other_out = [fast(t, other)[0] for t in toks + queued]
    for i, (e, gr, o) in enumerate(zip(eager, graph, other_out)):
        assert torch.equal(e, gr) and torch.equal(e, o), i
    assert torch.equal(eager_cache.ssm_state, cache.ssm_state) and torch.equal(eager_cache.conv_state, cache.conv_state)
    assert torch.equal(other.ssm_state, cache.ssm_state)
    assert len({o.data_ptr() for o in graph[:len(toks)]}) == len(toks)
    assert all((entry.io is None) == (decode_io == "copy") for entry in fast._decode_graphs.values())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("batch", [1, 8, 64])
def test_real_config_decode_graph_equals_eager_steps(batch):
    """At the real layer-0 config, where "auto" takes the GEMV (B=1) or split K into 8 / 2 slices for out_proj
    (B=8 / 64) with the split-K kernels reading the posted token and writing the posted output: 10 graph steps
    (the last token at an address that is not 16-byte aligned), queued without synchronisation, equal the eager
    steps bit for bit (the graph's arrival counters left at zero),
    and the "cublas" steps within bf16 rounding."""
    config = GraniteMambaConfig()
    fast = FastMambaLayer(config).to("cuda", BF16)
    fast.load_state_dict(synthetic_slice(config, 66).mamba)
    g = torch.Generator().manual_seed(67)
    toks = [torch.randn(batch, 1, config.hidden_size, generator=g).to("cuda", BF16) for _ in range(9)]
    toks.append(torch.randn(batch * config.hidden_size + 1, generator=g).to("cuda", BF16)[1:].view(batch, 1, -1))
    results = {}
    with torch.no_grad():
        _, start = fast(torch.randn(batch, 7, config.hidden_size, generator=g).to("cuda", BF16))
        for mode, graphs in (("auto", False), ("auto", True), ("cublas", False)):
            fast.decode_projections, fast.use_cuda_graphs = mode, graphs
            cache = start.clone()
            results[mode, graphs] = [fast(t, cache)[0] for t in toks], cache
        torch.cuda.synchronize()
    (eager, eager_cache), (graph, graph_cache) = results["auto", False], results["auto", True]
    assert all(torch.equal(e, o) for e, o in zip(eager, graph))
    assert torch.equal(eager_cache.ssm_state, graph_cache.ssm_state)
    assert torch.equal(eager_cache.conv_state, graph_cache.conv_state)
    entries = list(fast._decode_graphs.values())
    assert entries
    # counters only for a projection split over K: out_proj at B = 8 / 64, never the unsplit in_proj
    assert all([c is not None for c in entry.counters] == [False, batch > 1] for entry in entries)
    assert not any(c.any() for entry in entries for c in entry.counters if c is not None)
    for e, c in zip(eager, results["cublas", False][0]):
        assert ((e.float() - c.float()).norm() / c.float().norm()).item() < 2e-3


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_mapped_decode_replays_alternating_streams_in_order():
    """Decode steps of the B=2 graph (its table fetch acknowledges before the rest of the replay has read the stash)
    alternating between two streams with no synchronisation in between: outputs and states equal the eager steps
    bit for bit. (The replays here are short, so this shows the alternating path works; the ordering itself is
    pinned by the next test, where an unordered replay would overtake.)"""
    tiny = GraniteMambaConfig.tiny(chunk_size=16)
    fast = FastMambaLayer(tiny).to("cuda", BF16)
    fast.load_state_dict(synthetic_slice(tiny, 61).mamba)
    g = torch.Generator().manual_seed(62)
    toks = [torch.randn(2, 1, tiny.hidden_size, generator=g).to("cuda", BF16) for _ in range(12)]
    streams = (torch.cuda.Stream(), torch.cuda.Stream())
    with torch.no_grad():
        _, cache = fast(torch.randn(2, 7, tiny.hidden_size, generator=g).to("cuda", BF16))
        eager_cache = cache.clone()
        fast.use_cuda_graphs = False
        want = [fast(t, eager_cache)[0] for t in toks]
        fast.use_cuda_graphs = True
        got = [fast(toks[0], cache)[0]]  # captures the graph on this cache's tensors
        torch.cuda.synchronize()
        for stream in streams:
            stream.wait_stream(torch.cuda.current_stream())
        for i, t in enumerate(toks[1:]):
            with torch.cuda.stream(streams[i % 2]):
                if i == 0:
                    torch.cuda._sleep(20_000_000)
                got.append(fast(t, cache)[0])
        torch.cuda.synchronize()
    assert any(entry.io is not None for entry in fast._decode_graphs.values())
    for i, (w, o) in enumerate(zip(want, got)):
        assert torch.equal(w, o), i
    assert torch.equal(eager_cache.ssm_state, cache.ssm_state) and torch.equal(eager_cache.conv_state, cache.conv_state)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_mapped_decode_graph_on_a_new_stream_waits_for_the_previous_replay():
    """A ``_DecodeGraph`` whose table fetch acknowledges (as at B <= 2) and whose GEMV writes the posted output ~10 ms
    later: a replay on a side stream issued right after one on the default stream, with no synchronisation, must
    wait for it (else its fetch overwrites the stash word that the first replay's GEMV has not read yet, and the
    first output lands in the second's tensor). Both outputs must be where they belong."""
    from ssmkit.granite.layer import _DecodeGraph
    from ssmkit.kernels.common.mapped_io import MappedIO, capture_graph
    from ssmkit.kernels.granite.decode_linear import granite_decode_linear

    dev = torch.device("cuda")
    g = torch.Generator().manual_seed(63)
    w = (0.05 * torch.randn(40, 64, generator=g)).to(dev, BF16)
    io = MappedIO(dev)
    static_in = torch.zeros(1, 1, 64, device=dev, dtype=BF16)
    warm_out = torch.empty(1, 1, 40, device=dev, dtype=BF16)
    io.post(static_in, (warm_out,))

    def body():
        io.copy_in(static_in, ack=True)
        torch.cuda._sleep(20_000_000)
        return granite_decode_linear(static_in[:, 0], w, posted_out=(io.stash, io.dst_word(0)))[:, None]

    graph, static_out = capture_graph(body, body, dev)
    entry = _DecodeGraph(graph, static_in, static_out, io)
    toks = [torch.randn(1, 1, 64, generator=g).to(dev, BF16) for _ in range(2)]
    want = [granite_decode_linear(t[:, 0], w)[:, None] for t in toks]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    torch.cuda.synchronize()
    first = entry.run(toks[0])  # the default stream
    with torch.cuda.stream(side):
        second = entry.run(toks[1])
    torch.cuda.synchronize()
    assert torch.equal(first, want[0]) and torch.equal(second, want[1])


def test_fast_layer_deepcopies_and_pickles_without_captured_graphs(tiny):
    """Captured graphs (uncopyable, bound to memory) are dropped from copies; the original keeps them."""
    fast = FastMambaLayer(tiny).to(BF16)
    fast._decode_graphs["stand-in"] = threading.Lock()  # not picklable, like a torch.cuda.CUDAGraph
    clone = copy.deepcopy(fast)
    assert len(clone._decode_graphs) == 0 and len(fast._decode_graphs) == 1
    restored = pickle.loads(pickle.dumps(fast))
    assert all(torch.equal(a, b) for a, b in zip(restored.state_dict().values(), fast.state_dict().values()))


def _poison_new_empty(monkeypatch):
    """NaN-fill every tensor from ``Tensor.new_empty`` (the packed projections' buffers), so any pad position the
    kernels read without the layer having written it shows up."""
    real = torch.Tensor.new_empty

    def poisoned(self, *args, **kwargs):
        t = real(self, *args, **kwargs)
        return t.fill_(float("nan")) if t.is_floating_point() else t

    monkeypatch.setattr(torch.Tensor, "new_empty", poisoned)


@INTERPRETER_ONLY
@pytest.mark.parametrize("mode", ["rows", "packed"])
def test_packed_padded_gemms_equal_unpacked_path(tiny, monkeypatch, mode):
    """pack_padded_gemms (projections on real tokens only, each form) gives the unpacked path's outputs and caches
    bit for bit on a left-padded batch with an empty row, rows shorter than d_conv and a row crossing chunks; then
    through a padded continuation and a decode step. Unwritten buffer memory is NaN, so a pad the kernels read but
    the layer did not zero (or an output pad not written) would show."""
    _poison_new_empty(monkeypatch)
    layer = FastMambaLayer(tiny).to(BF16)
    layer.load_state_dict(synthetic_slice(tiny, 41).mamba)
    g = torch.Generator().manual_seed(42)
    prefill_mask = left_pad_mask([19, 8, 3, 1, 0])
    cont_mask = left_pad_mask([5, 2, 5, 0, 4])
    inputs = [(torch.randn(5, 19, tiny.hidden_size, generator=g).to(BF16), prefill_mask),
              (torch.randn(5, 5, tiny.hidden_size, generator=g).to(BF16), cont_mask),
              (torch.randn(5, 1, tiny.hidden_size, generator=g).to(BF16), None)]
    import ssmkit.granite.layer as layer_module

    made = []  # the packing mode of every call that packed (so the packed form is really the one taken)

    class RecordingPacking(layer_module._Packing):
        def __init__(self, packing_mode, *args):
            made.append(packing_mode)
            super().__init__(packing_mode, *args)

    monkeypatch.setattr(layer_module, "_Packing", RecordingPacking)
    results = {}
    for packed in (False, mode):
        layer.pack_padded_gemms = packed
        cache, outs = None, []
        made.clear()
        with torch.no_grad():
            for h, mask in inputs:
                out, cache = layer(h, cache, mask)
                outs.append(out)
        results[packed] = (outs, cache)
        assert made == ([mode, mode] if packed else [])  # the prefill and the padded continuation
    (outs_u, cache_u), (outs_p, cache_p) = results[False], results[mode]
    for i, (a, b) in enumerate(zip(outs_u, outs_p)):
        assert torch.equal(a, b), f"call {i}: max |diff| {(a.float() - b.float()).abs().max()}"
    assert torch.equal(cache_u.conv_state, cache_p.conv_state) and torch.equal(cache_u.ssm_state, cache_p.ssm_state)
    assert torch.all(outs_p[0][prefill_mask == 0] == 0) and not torch.all(outs_p[0][prefill_mask == 1] == 0)


@INTERPRETER_ONLY
def test_pack_padded_gemms_rejects_unknown_mode(tiny):
    layer = FastMambaLayer(tiny).to(BF16)
    layer.pack_padded_gemms = "scatter"
    with pytest.raises(ValueError, match="pack_padded_gemms"):
        layer(torch.randn(1, 3, tiny.hidden_size).to(BF16), attention_mask=left_pad_mask([3]))


def test_fast_layer_reads_mask_facts_with_the_triton_kernel(tiny, monkeypatch):
    """Where Triton runs, the fast layer's argument check reads the mask with ``mask_row_facts`` (one launch, one
    copy) and still rejects what the reference rejects: values other than 0 and 1."""
    import ssmkit.granite.layer as layer_module

    calls = []
    real = layer_module.mask_row_facts
    monkeypatch.setattr(layer_module, "mask_row_facts", lambda m: calls.append(1) or real(m))
    device = "cuda" if torch.cuda.is_available() else "cpu"
    fast = FastMambaLayer(tiny).to(device, BF16)
    h = torch.randn(2, 3, tiny.hidden_size).to(device, BF16)
    bad = torch.tensor([[0, 1, 1], [2, 1, 1]], device=device)
    with pytest.raises(ValueError, match="only 0 and 1"):
        fast(h, attention_mask=bad)
    with pytest.raises(ValueError, match="only 0 and 1"):
        ReferenceMambaLayer(tiny).to(device, BF16)(h, attention_mask=bad)
    assert len(calls) == 1
    mask, facts = fast.check_forward_args_with_facts(h, None, left_pad_mask([3, 1]).to(device))
    assert facts.lengths == (3, 1) and facts.binary and facts.left_padded and len(calls) == 2


def test_mask_facts_read_lengths_left_padding_and_values_in_one_copy(monkeypatch):
    """Packing needs left padding (real tokens = each row's last positions): ``mask_facts`` says so, with the
    lengths and the 0/1 check, from one device-to-host copy (``tolist`` once)."""
    from ssmkit.granite.reference import mask_facts

    copies = []
    real_tolist = torch.Tensor.tolist
    monkeypatch.setattr(torch.Tensor, "tolist", lambda t: copies.append(1) or real_tolist(t))

    def facts(m):
        f = mask_facts(m)
        return f.binary, f.lengths, f.left_padded

    assert facts(left_pad_mask([4, 0, 1, 3])) == (True, (4, 0, 1, 3), True)
    assert facts(torch.tensor([[1, 0, 1], [0, 1, 1]])) == (True, (2, 2), False)
    assert facts(torch.tensor([[1, 1, 0]], dtype=torch.bool)) == (True, (2,), False)
    assert facts(torch.tensor([[0, 1, 0, 1], [0, 0, 1, 1]])) == (True, (2, 2), False)
    assert facts(torch.tensor([[1], [0]])) == (True, (1, 0), True)
    assert facts(torch.tensor([[0, 0, 1], [0, 0, 0]], dtype=torch.bool)) == (True, (1, 0), True)
    assert facts(torch.tensor([[0, 2, 1]]))[0] is False
    assert facts(torch.tensor([[0.0, 0.5, 1.0]]))[0] is False
    assert facts(torch.tensor([[0.0, 1.0, float("nan")]]))[0] is False
    assert len(copies) == 9
    assert mask_facts(left_pad_mask([3, 3])).all_ones(3) and not mask_facts(left_pad_mask([3, 2])).all_ones(3)


ALL_GRAPH_MODES = ((False, "whole"), ("packed", "whole"), (False, "kernels"), ("packed", "kernels"),
                   ("rows", "kernels"), ("packed", "mapped"))


def _check_prefill_graphs_match_eager(device: str, modes=ALL_GRAPH_MODES, length: int = 21,
                                      unmasked: bool = True) -> None:
    """prefill_graphs ("whole" / "kernels", with packed projections or not, per ``modes``): replays with new inputs
    and masks of the captured shape equal eager calls bit for bit (outputs, caches), and what was returned
    survives later replays."""
    tiny = GraniteMambaConfig.tiny(chunk_size=16)  # the GPU's tl.dot tiles need >= 16
    fast = FastMambaLayer(tiny).to(device, BF16)
    fast.load_state_dict(synthetic_slice(tiny, 43).mamba)
    g = torch.Generator().manual_seed(44)
    masks = [left_pad_mask([length, 9, 2]).to(device), left_pad_mask([length, length - 4, 1]).to(device)]
    masks += [None] if unmasked else []
    hs = [torch.randn(3, length, tiny.hidden_size, generator=g).to(device, BF16) for _ in masks]
    for packed, mode in modes:
        fast.pack_padded_gemms = packed
        with torch.no_grad():
            fast.prefill_graphs = False
            eager = [fast(h, attention_mask=m) for h, m in zip(hs, masks)]
            fast.prefill_graphs = mode
            graph = [fast(h, attention_mask=m) for h, m in zip(hs, masks)]
            again = fast(hs[0], attention_mask=masks[0])  # a replay must not change what was returned
        for i, ((eo, ec), (go, gc)) in enumerate(zip(eager, graph)):
            assert torch.equal(eo, go), (mode, packed, i)
            assert torch.equal(ec.conv_state, gc.conv_state) and torch.equal(ec.ssm_state, gc.ssm_state), (mode, i)
        assert torch.equal(again[0], graph[0][0]) and again[0].data_ptr() != graph[0][0].data_ptr()
        assert again[1].ssm_state.data_ptr() != graph[0][1].ssm_state.data_ptr()
    assert len(fast._prefill_graphs) == 4  # LRU bound (2-3 keys per mode and packing), the oldest dropped
    # a graph of a packed key keeps its packing (index tensors built at capture from that key's lengths)
    assert all((entry.packing is None) == (key[4] is None) for key, entry in fast._prefill_graphs.items())


def _stand_in_graphs(monkeypatch):
    """CPU stand-in for CUDA graph capture: the "replay" re-runs the captured step (on the captured tensors) into
    the same static output, as a real replay does. Capture itself must not run the step on the caller's tensors
    (a real capture does not execute): the static output comes from the warm-up (the decode's runs on a scratch
    cache; the prefill's warm-up is its captured step on static buffers)."""
    import ssmkit.granite.layer as layer_module

    if torch.cuda.is_available():  # the stand-in runs the kernels on CPU tensors, in the interpreter
        pytest.skip("CPU stand-in for graph capture (the CUDA tests cover real graphs)")

    def stand_in_capture(warm_up, body, device, pool=None):  # (the pool: nothing to share off CUDA)
        static_out = warm_up()

        class Replay:
            def replay(self):
                static_out.copy_(body())

        return Replay(), static_out

    monkeypatch.setattr(layer_module, "capture_graph", stand_in_capture)
    monkeypatch.setattr(layer_module, "_can_capture", lambda hidden_states: True)


def test_prefill_graph_logic_matches_eager_with_a_stand_in_graph(monkeypatch):
    """The prefill graph path's buffers (copy in, static cache, kernels-mode static in_proj output with its pads
    zeroed once or packed, packing kept with the graph, clones out) on the CPU: a stand-in for capture whose replay
    re-runs the captured step into the same static output. (Unpacked "whole", the simplest mode, and an unmasked
    batch are left to the CUDA test to save interpreter time.)"""
    _stand_in_graphs(monkeypatch)
    _check_prefill_graphs_match_eager("cpu", ALL_GRAPH_MODES[1:], length=17, unmasked=False)


def _check_mapped_prefill_fills_given_caches(device: str) -> None:
    """prefill_graphs "mapped" (packed batches): a given empty cache is filled in place (its own tensors, also a
    non-contiguous one), a non-contiguous or unaligned hidden_states is read correctly, an unmasked batch falls back
    to the "kernels" graph, and everything equals the eager forward bit for bit."""
    tiny = GraniteMambaConfig.tiny(chunk_size=16)
    fast = FastMambaLayer(tiny).to(device, BF16)
    fast.load_state_dict(synthetic_slice(tiny, 57).mamba)
    g = torch.Generator().manual_seed(58)
    mask = left_pad_mask([19, 6, 1]).to(device)
    wide = torch.randn(3, 19, 2 * tiny.hidden_size, generator=g).to(device, BF16)
    flat = torch.randn(3 * 19 * tiny.hidden_size + 1, generator=g).to(device, BF16)
    hs = [torch.randn(3, 19, tiny.hidden_size, generator=g).to(device, BF16), wide[..., ::2],
          flat[1:].view(3, 19, tiny.hidden_size)]  # (a contiguous view at a 2-byte offset)
    with torch.no_grad():
        fast.prefill_graphs = False
        want = [fast(h, attention_mask=mask) for h in hs]
        fast.prefill_graphs = "mapped"
        for h, (wo, wc) in zip(hs, want):
            given = MambaCache.zeros(tiny, 3, device=device, dtype=BF16)
            given.ssm_state = torch.zeros(3, tiny.d_state, tiny.head_dim, tiny.num_heads, device=device
                                          ).permute(0, 3, 2, 1)  # the right shape, not contiguous
            conv, ssm = given.conv_state, given.ssm_state
            out, cache = fast(h, given, mask)
            assert cache is given and cache.conv_state is conv and cache.ssm_state is ssm
            assert torch.equal(out, wo) and torch.equal(conv, wc.conv_state) and torch.equal(ssm, wc.ssm_state)
        assert all(e.io is not None for e in fast._prefill_graphs.values())
        fast(hs[0])  # no mask: a "kernels" graph
    assert sum(e.io is None for e in fast._prefill_graphs.values()) == 1


def test_mapped_prefill_fills_given_caches_with_a_stand_in_graph(monkeypatch):
    _stand_in_graphs(monkeypatch)
    _check_mapped_prefill_fills_given_caches("cpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_mapped_prefill_fills_given_caches_cuda():
    _check_mapped_prefill_fills_given_caches("cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_fast_prefill_cuda_graph_matches_eager_and_returns_fresh_outputs():
    _check_prefill_graphs_match_eager("cuda")


def _check_guessed_packed_prefill(device: str, monkeypatch) -> None:
    """speculate_packed_prefill: once the last two calls of a shape ran the same packed graph, the next call
    replays it before the mask's facts are read (the order is spied on) and returns the bits of a layer that does
    not guess; a wrong guess (other lengths, an all-ones mask, a right-padded mask) returns the normal path's
    result too and resets the guess; another mask dtype is another route; a mask with other values raises the
    forward's ValueError after the replay; layout errors raise before anything is launched."""
    import ssmkit.granite.layer as layer_module

    tiny = GraniteMambaConfig.tiny(chunk_size=16)
    weights = synthetic_slice(tiny, 61).mamba
    fast, plain = FastMambaLayer(tiny).to(device, BF16), FastMambaLayer(tiny).to(device, BF16)
    fast.load_state_dict(weights)
    plain.load_state_dict(weights)
    plain.speculate_packed_prefill = False
    g = torch.Generator().manual_seed(62)
    length = 19
    events = []
    real_pending, real_run = layer_module.PendingMaskFacts, layer_module._PrefillGraph.run_mapped

    class SpyPending(real_pending):
        def __init__(self, mask):
            events.append("facts taken")
            super().__init__(mask)

        def result(self):
            events.append("facts read")
            return super().result()

    def spy_run(entry, hidden_states, cache):
        events.append("replay")
        return real_run(entry, hidden_states, cache)

    monkeypatch.setattr(layer_module, "PendingMaskFacts", SpyPending)
    monkeypatch.setattr(layer_module._PrefillGraph, "run_mapped", spy_run)
    normal_reads = []  # the normal path's facts reads (check_forward_args_with_facts -> _mask_facts)
    real_facts = fast._mask_facts
    monkeypatch.setattr(fast, "_mask_facts", lambda m: normal_reads.append(1) or real_facts(m))
    a, b = (6, 1), (7, 1)  # the short rows' lengths of masks A and B (row 0 is full)
    mask = {"A": left_pad_mask([length, *a]), "B": left_pad_mask([length, *b]),
            "ones": torch.ones(3, length, dtype=torch.long), "right": left_pad_mask([length, *a]).flip(1)}
    mask = {k: m.to(device) for k, m in mask.items()}
    mask["B bool"] = mask["B"].to(torch.bool)
    guessed = ["facts taken", "replay", "facts read"]
    # (mask, replayed before the facts were read, the route's guess after the call: lengths or None, repeats)
    plan = [("A", False, a, 0), ("A", False, a, 1), ("A", True, a, 1), ("A", True, a, 1), ("B", True, b, 0),
            ("B", False, b, 1), ("B", True, b, 1), ("ones", True, None, 0), ("B", False, b, 0), ("B", False, b, 1),
            ("right", True, None, 0), ("B", False, b, 0), ("B", False, b, 1), ("B bool", False, b, 0)]
    with torch.no_grad():
        for i, (name, early, want_lengths, want_repeats) in enumerate(plan):
            h = torch.randn(3, length, tiny.hidden_size, generator=g).to(device, BF16)
            want_out, want_cache = plain(h, attention_mask=mask[name])
            events.clear()
            normal_reads.clear()
            out, cache = fast(h, attention_mask=mask[name])
            assert (events[:3] == guessed) == early, (i, name, events)
            # the facts are read once: by the guess (right or wrong) or by the normal path
            assert normal_reads == ([] if early else [1]) and "facts read" not in events[3:], (i, events)
            if i == 2:
                kept = (out.clone(), out)  # a guessed call's output must survive the later calls
            key, repeats = fast._packed_routes[fast._route_key(h, mask[name])]
            assert (None if key is None else key[4][1:]) == want_lengths and repeats == want_repeats, (i, key)
            assert torch.equal(out, want_out), i
            assert torch.equal(cache.conv_state, want_cache.conv_state), i
            assert torch.equal(cache.ssm_state, want_cache.ssm_state), i
            assert cache.has_previous_state and cache.seqlen_offset == length
        assert torch.equal(kept[0], kept[1])
        bad = mask["B"].clone()
        bad[1, -1] = 2
        h = torch.randn(3, length, tiny.hidden_size, generator=g).to(device, BF16)
        for _ in range(2):
            fast(h, attention_mask=mask["B"])
        events.clear()
        with pytest.raises(ValueError, match="only 0 and 1"):
            fast(h, attention_mask=bad)
        assert events == guessed
        events.clear()
        with pytest.raises(ValueError, match="attention_mask must have shape"):
            fast(h, attention_mask=mask["B"][:2])
        with pytest.raises(TypeError, match="dtype"):
            fast(h.float(), attention_mask=mask["B"])
        assert events == []
        # a switch changed after two agreeing calls, or the graphs cleared: no guess on the next call
        for change in ("switch", "clear"):
            for _ in range(2):
                fast(h, attention_mask=mask["B"])
            if change == "switch":
                fast.cb_spread = not fast.cb_spread
            else:
                fast.clear_graphs()
                assert not fast._packed_routes
            events.clear()
            fast(h, attention_mask=mask["B"])
            assert events[:1] != ["facts taken"], (change, events)
            fast.cb_spread = plain.cb_spread


def test_guessed_packed_prefill_with_a_stand_in_graph(monkeypatch):
    _stand_in_graphs(monkeypatch)
    _check_guessed_packed_prefill("cpu", monkeypatch)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_guessed_packed_prefill_cuda(monkeypatch):
    _check_guessed_packed_prefill("cuda", monkeypatch)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA streams need a GPU")
def test_guessed_packed_prefill_on_side_streams_cuda(monkeypatch):
    """The guess on non-default streams, with each call's mask written in place on the calling stream behind a long
    matmul: calls on a side stream, then alternating with the default stream, then a changed mask whose new values
    are still queued when the call starts. A facts read that did not wait for the calling stream's work so far would
    see the old mask, take the guess for right and return the old padding's result; a replay not ordered after the
    previous one on another stream could mix two calls' buffers. Every output and cache must equal a layer's that
    does not guess."""
    import ssmkit.granite.layer as layer_module

    guesses = []  # per call: did it replay before the facts were read

    class SpyPending(layer_module.PendingMaskFacts):
        def __init__(self, mask):
            guesses[-1] = True
            super().__init__(mask)

    monkeypatch.setattr(layer_module, "PendingMaskFacts", SpyPending)
    tiny = GraniteMambaConfig.tiny(chunk_size=16)
    weights = synthetic_slice(tiny, 63).mamba
    fast, plain = FastMambaLayer(tiny).to("cuda", BF16), FastMambaLayer(tiny).to("cuda", BF16)
    fast.load_state_dict(weights)
    plain.load_state_dict(weights)
    plain.speculate_packed_prefill = False
    g = torch.Generator().manual_seed(64)
    length = 19
    masks = {"A": left_pad_mask([length, 6, 1]).cuda(), "B": left_pad_mask([length, 7, 1]).cuda()}
    side, other = torch.cuda.Stream(), torch.cuda.Stream()
    big = torch.randn(4096, 4096, device="cuda")
    mask = masks["A"].clone()  # one tensor, rewritten per call on the calling stream
    default = torch.cuda.default_stream()
    plan = [(side, "A"), (side, "A"), (side, "A"), (default, "A"), (side, "A"), (other, "A"), (side, "A"),
            (side, "B"), (side, "B"), (side, "B"), (other, "A")]
    with torch.no_grad():
        for i, (stream, name) in enumerate(plan):
            h = torch.randn(3, length, tiny.hidden_size, generator=g).to("cuda", BF16)
            want_out, want_cache = plain(h, attention_mask=masks[name])
            torch.cuda.synchronize()
            with torch.cuda.stream(stream):
                for _ in range(4):  # ~ms of queued work before the mask's new values land
                    big = (big @ big).clamp_(-1, 1)
                mask.copy_(masks[name])
                h_s = h.clone()
                guesses.append(False)
                out, cache = fast(h_s, attention_mask=mask)
            torch.cuda.synchronize()
            assert torch.equal(out, want_out), (i, name)
            assert torch.equal(cache.conv_state, want_cache.conv_state), (i, name)
            assert torch.equal(cache.ssm_state, want_cache.ssm_state), (i, name)
    # guessed from the third call on, across the stream changes; the changed mask (call 7) was a (wrong) guess
    assert guesses[:8] == [False, False] + [True] * 6 and guesses[10], guesses


def test_in_proj_into_given_buffer_equals_allocating_in_proj(tiny):
    """The "kernels" prefill graph writes in_proj into its static buffer (``out=``): same values as the allocating
    in_proj, with and without a projection bias, packed in each form or not (real rows only, where packed)."""
    from ssmkit.granite.layer import _Packing

    g = torch.Generator().manual_seed(45)
    mask = left_pad_mask([7, 3])
    h = torch.randn(2, 7, tiny.hidden_size, generator=g).to(BF16)
    for bias in (False, True):
        layer = FastMambaLayer(GraniteMambaConfig.tiny(proj_bias=bias)).to(BF16)
        with torch.no_grad():
            layer.in_proj.weight.normal_(generator=g)
            if bias:
                layer.in_proj.bias.normal_(generator=g)
            modes = (None,) if bias else (None, "rows", "packed")
            for mode in modes:
                packing = None if mode is None else _Packing(mode, (7, 3), mask)
                want = layer._in_proj(h, mask, packing)
                got = torch.full_like(want, float("nan"))
                assert layer._in_proj(h, mask, packing, out=got) is got
                real = mask.bool() if mode == "rows" else torch.ones(want.shape[:-1], dtype=torch.bool)
                assert torch.equal(got[real], want[real])


def test_clear_graphs_drops_graphs_and_bindings_and_the_next_step_recaptures(tiny, monkeypatch):
    """A captured decode graph reads the parameters at their capture addresses, so after a parameter is replaced by
    a new tensor ``clear_graphs()`` must drop every graph and binding and the next step capture anew (the CPU
    stand-in cannot show stale weights: its replay re-reads the attributes; the capture count shows the recapture),
    with results equal to the eager step on the new weights."""
    import ssmkit.granite.layer as layer_module

    _stand_in_graphs(monkeypatch)
    captures = []
    stand_in = layer_module.capture_graph
    monkeypatch.setattr(layer_module, "capture_graph", lambda *a, **k: captures.append(1) or stand_in(*a, **k))
    fast = FastMambaLayer(tiny).to(BF16)
    fast.load_state_dict(synthetic_slice(tiny, 53).mamba)
    g = torch.Generator().manual_seed(54)
    with torch.no_grad():
        _, cache = fast(torch.randn(2, 5, tiny.hidden_size, generator=g).to(BF16))
        tok = torch.randn(2, 1, tiny.hidden_size, generator=g).to(BF16)
        fast(tok, cache)
        n = len(captures)  # the prefill's graph and the decode graph
        fast(tok, cache)
        assert len(captures) == n and len(fast._decode_graphs) == 1 and len(fast._decode_bound) == 1
        fast.out_proj.weight = torch.nn.Parameter(torch.randn_like(fast.out_proj.weight))
        fast.clear_graphs()
        assert not fast._decode_graphs and not fast._decode_bound and not fast._prefill_graphs
        eager_cache = cache.clone()
        fast.use_cuda_graphs = False
        want, _ = fast(tok, eager_cache)
        fast.use_cuda_graphs = True
        got, _ = fast(tok, cache)
    assert len(captures) == n + 1
    assert torch.equal(got, want) and torch.equal(cache.ssm_state, eager_cache.ssm_state)


@pytest.mark.parametrize("batch", [2, 3])
def test_decode_io_modes_agree_with_a_stand_in_graph(tiny, monkeypatch, batch):
    """decode_io "mapped" (the graph's own copies through the posted address table) and "copy" (copy_ in, clone
    out) give the eager step's outputs and states bit for bit on the CPU stand-in graph; "mapped" returns a new
    tensor per call that is not the graph's static output, also for a non-contiguous token and for a contiguous
    one at an address that is not 16-byte aligned (posted as an aligned copy). Batch 2: in_proj on the split-K
    kernel reading the posted token, the posted GEMV; batch 3: both on the split-K kernel, K in 2 (in_proj) and 4
    (out_proj) slices (the graph's counters reused by every replay)."""
    from ssmkit.granite import layer as layer_module

    monkeypatch.setattr(layer_module, "_AUTO_SPLITK", {"in_proj": ((64, (16, 2, 32)),),
                                                       "out_proj": ((64, (16, 4, 32)),)})
    _stand_in_graphs(monkeypatch)
    fast = FastMambaLayer(tiny).to(BF16)
    fast.load_state_dict(synthetic_slice(tiny, 55).mamba)
    g = torch.Generator().manual_seed(56)
    unaligned = torch.randn(batch * tiny.hidden_size + 1, generator=g).to(BF16)[1:].view(batch, 1, -1)
    assert unaligned.is_contiguous() and unaligned.data_ptr() % 16
    toks = [torch.randn(batch, 1, tiny.hidden_size, generator=g).to(BF16),
            torch.randn(batch, 3, tiny.hidden_size, generator=g).to(BF16)[:, 1:2], unaligned]
    with torch.no_grad():
        _, start = fast(torch.randn(batch, 5, tiny.hidden_size, generator=g).to(BF16))
        fast.use_cuda_graphs = False
        eager_cache = start.clone()
        want = [fast(t, eager_cache)[0] for t in toks]
        fast.use_cuda_graphs = True
        for mode in ("mapped", "copy"):
            fast.decode_io = mode
            cache = start.clone()
            got = [fast(t, cache)[0] for t in toks]
            entry = next(reversed(fast._decode_graphs.values()))
            if entry.io is not None:  # the unaligned token was posted as an aligned copy (in_proj's 16-byte reads)
                assert entry.io.table[1] % 16 == 0 and entry.io.table[1] != unaligned.data_ptr()
            assert (entry.io is None) == (mode == "copy")
            for w, o in zip(want, got):
                assert torch.equal(w, o) and o.data_ptr() != entry.static_out.data_ptr(), mode
            assert torch.equal(cache.ssm_state, eager_cache.ssm_state), mode
            assert torch.equal(cache.conv_state, eager_cache.conv_state), mode
            # counters for the projections split over K only (out_proj at batch 2 is the GEMV)
            assert [c is not None for c in entry.counters] == [True, batch > 2], mode
            assert not any(c.any() for c in entry.counters if c is not None), mode


def test_mapped_decode_recovers_from_a_failed_replay_and_checks_cache_tensors(tiny, monkeypatch):
    """A replay that raises after its addresses were posted leaves the graph usable (the next step equals the
    eager step); a bound cache whose conv_state is not a tensor gets the reference's TypeError, not a crash in
    the fast path."""
    _stand_in_graphs(monkeypatch)
    fast = FastMambaLayer(tiny).to(BF16)
    fast.load_state_dict(synthetic_slice(tiny, 59).mamba)
    g = torch.Generator().manual_seed(60)
    tok = torch.randn(2, 1, tiny.hidden_size, generator=g).to(BF16)
    with torch.no_grad():
        _, cache = fast(torch.randn(2, 5, tiny.hidden_size, generator=g).to(BF16))
        fast(tok, cache)  # captures and binds
        entry = next(iter(fast._decode_graphs.values()))
        real_replay = entry.graph.replay
        entry.graph.replay = lambda: (_ for _ in ()).throw(RuntimeError("replay failed"))
        with pytest.raises(RuntimeError, match="replay failed"):
            fast(tok, cache)
        entry.graph.replay = real_replay
        eager = cache.clone()
        fast.use_cuda_graphs = False
        want, _ = fast(tok, eager)
        fast.use_cuda_graphs = True
        got, _ = fast(tok, cache)
        assert torch.equal(got, want) and torch.equal(cache.ssm_state, eager.ssm_state)
        conv = cache.conv_state
        cache.conv_state = None
        with pytest.raises(TypeError, match="must be torch.Tensors"):
            fast(tok, cache)
        with pytest.raises(TypeError, match="must be torch.Tensors"):
            ReferenceMambaLayer(tiny).to(BF16)(tok, cache)
        cache.conv_state = conv


def test_unsupported_mask_dtype_gets_the_reference_behaviour(tiny):
    """A mask dtype the mask kernel does not read (uint16) takes the reference's eager check: the same outcome."""
    h = torch.randn(2, 3, tiny.hidden_size).to(BF16)
    mask = left_pad_mask([3, 2]).to(torch.uint16)
    outcomes = []
    for layer in (ReferenceMambaLayer(tiny).to(BF16), FastMambaLayer(tiny).to(BF16)):
        try:
            layer.check_forward_args_with_facts(h, None, mask)
            outcomes.append(None)
        except Exception as e:  # noqa: BLE001 (whatever the reference raises, the fast layer must raise too)
            outcomes.append(type(e))
    assert outcomes[0] == outcomes[1]


def test_decode_fast_path_equals_full_path_and_keeps_every_check(tiny, monkeypatch):
    """forward's decode fast path (a cache bound to its captured graph skips check_forward_args and the graph key)
    gives the full path's outputs and states bit for bit, is really taken, and still raises exactly the reference's
    errors, re-binds when the cache's tensors or the switches change, and falls back for a mask or an empty cache."""
    _stand_in_graphs(monkeypatch)
    fast = FastMambaLayer(tiny).to(BF16)
    fast.load_state_dict(synthetic_slice(tiny, 51).mamba)
    g = torch.Generator().manual_seed(52)
    tok = lambda b=2: torch.randn(b, 1, tiny.hidden_size, generator=g).to(BF16)  # noqa: E731
    with torch.no_grad():
        _, cache = fast(torch.randn(2, 5, tiny.hidden_size, generator=g).to(BF16))
    full_cache = cache.clone()
    checks = []
    real_check = fast.check_forward_args_with_facts
    monkeypatch.setattr(fast, "check_forward_args_with_facts", lambda *a: checks.append(1) or real_check(*a))

    def both(h, grad=False):
        """One step through the fast path on ``cache`` and the full path on ``full_cache``: equal bit for bit."""
        with torch.set_grad_enabled(grad):
            fast.decode_fast_path = False
            want, _ = fast(h, full_cache)
            fast.decode_fast_path = True
            n = len(checks)
            got, same = fast(h, cache)
        assert same is cache and torch.equal(got, want) and not got.requires_grad
        assert torch.equal(cache.conv_state, full_cache.conv_state)
        assert torch.equal(cache.ssm_state, full_cache.ssm_state)
        assert cache.seqlen_offset == full_cache.seqlen_offset
        return len(checks) == n  # True: the fast path ran (no full argument check)

    assert not both(tok())  # first call on this cache: full path, binds it
    assert both(tok()) and both(tok(), grad=True)
    # every check of the reference still fires on a bound cache
    with pytest.raises(ValueError, match="batch"):
        fast(tok(3), cache)
    with pytest.raises(TypeError, match="dtype"):
        fast(tok().float(), cache)
    with pytest.raises(ValueError, match="hidden_size"):
        fast(torch.randn(2, 1, tiny.hidden_size + 1).to(BF16), cache)
    with pytest.raises(ValueError, match="rank"):
        fast(tok()[:, 0], cache)
    with pytest.raises(TypeError, match="hidden_states must be a torch.Tensor"):
        fast(tok().tolist(), cache)
    with pytest.raises(ValueError, match="only 0 and 1"):
        fast(tok(), cache, torch.full((2, 1), 2))
    fast.in_proj.float()  # (in_proj cast alone: the layer keeps its graphs and bindings)
    with pytest.raises(TypeError, match="does not match the layer weights"):
        fast(tok(), cache)
    fast.in_proj.to(BF16)
    ssm = cache.ssm_state
    for wrong in (ssm.to(BF16), ssm.view(torch.int32)):  # (the view: the bound address, another dtype)
        cache.ssm_state = wrong
        with pytest.raises(TypeError, match="ssm_state must be float32"):
            fast(tok(), cache)
    cache.ssm_state = ssm[:, :, :, :-1]
    with pytest.raises(ValueError, match="does not match the layer config"):
        fast(tok(), cache)
    # new state tensors (same shapes) on the same cache object: a new graph, then fast again
    cache.ssm_state = ssm.clone()
    assert not both(tok()) and both(tok())
    cache.conv_state = cache.conv_state.clone()  # (a new conv_state alone: the bound state's address unchanged)
    assert not both(tok()) and both(tok())
    # a new cache object on the same tensors (a caller that wraps its state per call) takes the fast path at once
    cache = MambaCache(conv_state=cache.conv_state, ssm_state=cache.ssm_state, has_previous_state=True,
                       seqlen_offset=cache.seqlen_offset)
    assert both(tok())
    # a switch change re-binds (the evict hint, the conv apart; then the projections), then the fast path serves the
    # new graph
    fast.decode_evict_first = not fast.decode_evict_first
    assert not both(tok()) and both(tok())
    fast.decode_conv_apart = True
    assert not both(tok()) and both(tok())
    fast.decode_conv_apart = None
    assert not both(tok()) and both(tok())
    fast.decode_projections = "triton"
    assert not both(tok()) and both(tok())
    fast.decode_projections = "auto"
    # a valid mask takes the full path (the mask is ignored for L == 1, as in 5.17)
    n = len(checks)
    with torch.no_grad():
        fast(tok(), cache.clone(), torch.ones(2, 1, dtype=torch.long))
    assert len(checks) == n + 1
    # an empty cache is a prefill, not a decode, even on the bound tensors (their stale states are not read)
    assert not both(tok()) and both(tok())  # (re-bound under the projections' switch set back, then fast)
    empty_full = cache.clone()
    cache.has_previous_state = empty_full.has_previous_state = False
    n = len(checks)
    with torch.no_grad():
        h = tok()
        want, _ = fast(h, empty_full)
        got, _ = fast(h, cache)
    assert len(checks) == n + 2  # both calls took the full path
    assert torch.equal(got, want) and torch.equal(cache.ssm_state, empty_full.ssm_state)
    assert torch.equal(cache.conv_state, empty_full.conv_state)


def _check_prefill_fast_path(device: str, monkeypatch) -> None:
    """forward's prefill fast path (a call without cache or mask, of a shape bound to the unmasked graph its last
    full-path call ran, skips check_forward_args and the graph key) gives the full path's outputs and caches bit for
    bit in new tensors, is really taken (for "kernels" and "whole" graphs, several shapes), keeps the graphs' LRU
    order, still raises exactly the reference's errors, re-binds when a switch changes, and is not taken with a
    mask, a cache, prefill_graphs False, or after the bound graph is dropped."""
    from ssmkit.granite import layer as layer_module

    monkeypatch.setattr(layer_module, "_MAX_PREFILL_GRAPHS", 2)
    cfg = GraniteMambaConfig.tiny(chunk_size=16)  # (the GPU's tl.dot tiles need >= 16)
    fast = FastMambaLayer(cfg).to(device, BF16)
    fast.load_state_dict(synthetic_slice(cfg, 61).mamba)
    fast.prefill_address_graphs = False  # (the bindings by shape alone; addressed graphs: _check_addressed_prefill)
    g = torch.Generator().manual_seed(62)
    hid = lambda b=2, n=5: torch.randn(b, n, cfg.hidden_size, generator=g).to(device, BF16)  # noqa: E731
    checks = []
    real_check = fast.check_forward_args_with_facts
    monkeypatch.setattr(fast, "check_forward_args_with_facts", lambda *a: checks.append(1) or real_check(*a))

    def both(h, grad=False):
        """The call with the fast path allowed, then the full path: equal bit for bit, new tensors. True: the first
        call took the fast path (no argument check)."""
        with torch.set_grad_enabled(grad):
            n = len(checks)
            got, cache = fast(h)
            fast_taken = len(checks) == n
            fast.prefill_fast_path = False
            want, want_cache = fast(h)
            fast.prefill_fast_path = True
        assert torch.equal(got, want) and not got.requires_grad and got.data_ptr() != want.data_ptr()
        assert torch.equal(cache.conv_state, want_cache.conv_state)
        assert torch.equal(cache.ssm_state, want_cache.ssm_state)
        assert cache.ssm_state.data_ptr() != want_cache.ssm_state.data_ptr()
        assert cache.has_previous_state and cache.seqlen_offset == h.shape[1] == want_cache.seqlen_offset
        return fast_taken

    def shapes(*batches):
        return {torch.Size((b, 5, cfg.hidden_size)) for b in batches}

    with torch.no_grad():
        first = fast(hid())  # (captures and binds)
    kept = first[0].clone(), first[1].ssm_state.clone()
    assert both(hid()) and both(hid(), grad=True)
    # what an earlier call returned survives the fast path's replays
    assert torch.equal(first[0], kept[0]) and torch.equal(first[1].ssm_state, kept[1])
    # every check of the reference still fires for a bound shape
    with pytest.raises(TypeError, match="dtype"):
        fast(hid().float())
    with pytest.raises(ValueError, match="hidden_size"):
        fast(torch.randn(2, 5, cfg.hidden_size + 1, device=device).to(BF16))
    with pytest.raises(ValueError, match="rank"):
        fast(hid()[0])
    with pytest.raises(TypeError, match="hidden_states must be a torch.Tensor"):
        fast(hid().tolist())
    fast.in_proj.float()  # (in_proj cast alone: the layer keeps its graphs and bindings)
    with pytest.raises(TypeError, match="does not match the layer weights"):
        fast(hid())
    fast.in_proj.to(BF16)
    if device == "cuda":  # in_proj moved alone (the CPU has no second device): the reference's device error
        fast.in_proj.cpu()
        with pytest.raises(ValueError, match="the layer weights on cpu"):
            fast(hid())
        fast.in_proj.to(device)
    fast.clear_graphs()  # (a replaced parameter: the documented step)
    assert not both(hid()) and both(hid())
    # a tensor subclass, a caller capturing a graph (here: _can_capture false) take the full path; inference mode
    # takes the fast path
    n = len(checks)
    with torch.no_grad():
        fast(torch.nn.Parameter(hid(), requires_grad=False))
        with monkeypatch.context() as patch:
            patch.setattr(layer_module, "_can_capture", lambda hidden_states: False)
            fast(hid())
    assert len(checks) == n + 2
    h = hid()
    with torch.inference_mode():
        got = fast(h)[0]
    assert len(checks) == n + 2 and torch.equal(got, fast(h)[0])
    # a copy starts without graphs or bindings, and its calls equal the original's
    clone = copy.deepcopy(fast)
    assert not clone._prefill_bound and not clone._prefill_graphs
    with torch.no_grad():
        assert torch.equal(clone(h)[0], got) and torch.equal(clone(h)[0], got)
    # a mask or a given empty cache takes the full path
    n = len(checks)
    with torch.no_grad():
        fast(hid(), attention_mask=torch.ones(2, 5, dtype=torch.long, device=device))
        fast(hid(), MambaCache.zeros(cfg, 2, device=device, dtype=BF16))
    assert len(checks) == n + 2
    # a left-padded call's graph (unpacked: a "kernels" graph reading its mask) is not bound to its shape
    fast.pack_padded_gemms = False
    with torch.no_grad():
        fast(hid(), attention_mask=left_pad_mask([5, 2]).to(device))
    assert not both(hid()) and both(hid())
    fast.pack_padded_gemms = "packed"
    assert not both(hid()) and both(hid())
    # a switch change re-binds (the same key: "kernels" for an unmasked "mapped"; new keys: cb_spread, "whole")
    for name, value in (("prefill_graphs", "kernels"), ("cb_spread", False), ("prefill_graphs", "whole")):
        setattr(fast, name, value)
        assert not both(hid()) and both(hid()), name
    # no graph, no fast path; back to the bound graph's switches: fast at once
    fast.prefill_graphs = False
    n = len(checks)
    with torch.no_grad():
        fast(hid())
    assert len(checks) == n + 1
    fast.prefill_graphs = "whole"
    assert both(hid())
    # two shapes bound side by side (at most 2 graphs kept here); a fast call makes its graph the newest, so a third
    # shape evicts the other one, whose binding goes with it (its next call captures anew)
    assert not both(hid(3)) and both(hid(3))  # (3, 5)'s graph the newest
    n = len(checks)
    with torch.no_grad():
        fast(hid())
    assert len(checks) == n  # the fast path alone: (2, 5)'s graph the newest
    assert not both(hid(4))  # evicts (3, 5)'s graph
    assert len(fast._prefill_graphs) == 2 and set(fast._prefill_bound) == shapes(2, 4)
    assert both(hid()) and not both(hid(3)) and both(hid(3))
    fast.clear_graphs()
    assert not fast._prefill_bound
    assert not both(hid()) and both(hid())
    fast.float()  # moving or casting the layer drops the graphs and their bindings
    assert not fast._prefill_bound and not fast._prefill_graphs


def test_prefill_fast_path_with_a_stand_in_graph(monkeypatch):
    _stand_in_graphs(monkeypatch)
    _check_prefill_fast_path("cpu", monkeypatch)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_prefill_fast_path_cuda(monkeypatch):
    _check_prefill_fast_path("cuda", monkeypatch)


def _check_addressed_prefill(device: str, monkeypatch) -> None:
    """prefill_address_graphs: an unmasked prefill without a cache at an address seen before gets a graph of its
    own (in_proj inside, reading the caller's memory at replay time), captured on that second sighting, in an LRU
    of its own, and only while there is room or the least recently replayed one is idle (fresh addresses, a
    non-contiguous input or a tensor subclass with or without room, the switch off, a full LRU with none idle
    capture none; "whole" graphs take none; the other graphs' LRU drops none of them); the shape's "kernels" and
    "addressed" graphs share one memory pool and replay stream, and a shape's pool goes with its last graph; every
    call equals the eager forward bit for bit in new tensors, also after the caller rewrote its tensor in place or
    a new tensor object took a used address (CUDA: the graph keeps no reference to the caller's tensor) or the
    calls came from two streams; once captured the fast path replays it without the argument check, and a call at
    that address which the check would refuse (another dtype, in_proj cast) still gets the reference's error; an
    evicted graph's binding goes with it; clear_graphs / a copy forget the addresses and pools."""
    import weakref

    from ssmkit.granite import layer as layer_module

    monkeypatch.setattr(layer_module, "_MAX_PREFILL_GRAPHS", 4)
    monkeypatch.setattr(layer_module, "_MAX_ADDRESSED_GRAPHS", 3)
    monkeypatch.setattr(layer_module, "_ADDRESSED_IDLE_REPLAYS", 100)
    cfg = GraniteMambaConfig.tiny(chunk_size=16)  # (the GPU's tl.dot tiles need >= 16)
    fast = FastMambaLayer(cfg).to(device, BF16)
    fast.load_state_dict(synthetic_slice(cfg, 71).mamba)
    fast.prefill_address_graphs = True  # (the default; set so that the test does not depend on it)
    g = torch.Generator().manual_seed(72)
    hid = lambda b=2: torch.randn(b, 5, cfg.hidden_size, generator=g).to(device, BF16)  # noqa: E731
    checks, captures, replays, orders = [], [], [], []
    real_check, real_capture = fast.check_forward_args_with_facts, layer_module.capture_graph
    real_replay, real_order = layer_module._PrefillGraph.replay, layer_module._PrefillGraph.order
    monkeypatch.setattr(fast, "check_forward_args_with_facts", lambda *a: checks.append(1) or real_check(*a))
    monkeypatch.setattr(layer_module, "capture_graph",
                        lambda *a, **k: captures.append(k.get("pool")) or real_capture(*a, **k))
    monkeypatch.setattr(layer_module._PrefillGraph, "replay",
                        lambda self, *a: replays.append(self.graph_mode) or real_replay(self, *a))
    monkeypatch.setattr(layer_module._PrefillGraph, "order", lambda self: orders.append(self.graph_mode) or
                        real_order(self))

    def eager(h):
        fast.prefill_graphs = False
        try:
            return fast(h)
        finally:
            fast.prefill_graphs = "mapped"

    returned = []  # every result of the layer's calls below, alive: a new call must return new tensors

    def same(got, want):
        (go, gc), (wo, wc) = got, want
        assert torch.equal(go, wo) and torch.equal(gc.conv_state, wc.conv_state)
        assert torch.equal(gc.ssm_state, wc.ssm_state)
        ptrs = {go.data_ptr(), gc.conv_state.data_ptr(), gc.ssm_state.data_ptr()}
        assert not ptrs & {t.data_ptr() for r in returned for t in (r[0], r[1].conv_state, r[1].ssm_state)}
        returned.append(got)

    def addressed():
        assert all(e.graph_mode == "addressed" for e in fast._addressed_graphs.values())
        assert all(e.graph_mode != "addressed" for e in fast._prefill_graphs.values())
        return {(e.key[-1], torch.Size(e.key[0])) for e in fast._addressed_graphs.values()}

    def counts():
        return len(checks), len(captures)

    hs = [hid() for _ in range(3)]
    with torch.no_grad():
        want = [eager(h) for h in hs]
        first = fast(hs[0])
        kept = first[0].clone()
        assert len(captures) == 1 and replays[-1] == "kernels"  # first sighting: the shape's "kernels" graph
        for h, w in zip(hs[1:], want[1:]):
            same(fast(h), w)  # first sightings by the shape's binding: remembered, not captured
        assert len(captures) == 1 and replays[-2:] == ["kernels"] * 2
        n = len(checks)
        for h, w in zip(hs, want):
            same(fast(h), w)  # second sightings: the full path captures each address's graph
        assert counts() == (n + 3, 4) and replays[-3:] == ["addressed"] * 3
        assert addressed() == set(fast._prefill_addressed) == {(h.data_ptr(), h.shape) for h in hs}
        # one pool and one replay stream for the shape's kernels graph and its addressed graphs
        assert captures[0] is not None and all(p is captures[0] for p in captures)
        entries = [*fast._prefill_graphs.values(), *fast._addressed_graphs.values()]
        assert len(entries) == 4 and all(e._stream is entries[0]._stream for e in entries)
        assert list(fast._prefill_pools) == [entries[0].key[:3]]
        n = len(checks)
        for h, w in zip(hs, want):
            same(fast(h), w)  # bound: the fast path replays the address's graph
        assert counts() == (n, 4) and replays[-3:] == ["addressed"] * 3
        assert torch.equal(first[0], kept)  # what an earlier call returned survives the replays
        hs[0].copy_(hid())  # the caller rewrites its tensor: the graph reads it at replay time
        want[0] = eager(hs[0])
        same(fast(hs[0]), want[0])
        assert replays[-1] == "addressed"
        # a new tensor object at a used address (the old one dropped) is read there
        storage, shape = hs[2].untyped_storage(), hs[2].shape
        old = weakref.ref(hs[2])
        hs[2] = h = w = None
        if device == "cuda":
            assert old() is None  # the graph keeps no reference to the caller's tensor
        hs[2] = torch.empty(0, device=device, dtype=BF16).set_(storage, 0, shape).copy_(hid())
        want[2] = eager(hs[2])
        same(fast(hs[2]), want[2])
        assert counts()[1] == 4 and replays[-1] == "addressed"
        if device == "cuda":  # calls from two streams back to back: the shape's one replay stream follows them
            torch.cuda.synchronize()  # (the inputs ready for the side stream)
            side = torch.cuda.Stream()
            with torch.cuda.stream(side):
                got = fast(hs[1])
                assert entries[0]._stream._raw == side.cuda_stream
            got0 = fast(hs[0])  # (no wait here: the layer orders the replays that share the pool)
            assert entries[0]._stream._raw == torch.cuda.current_stream().cuda_stream
            torch.cuda.synchronize()  # (the caller's order for reading got)
            same(got, want[1])
            same(got0, want[0])
            assert replays[-2:] == ["addressed"] * 2
        # the addressed LRU is full (3), none idle: recurring fresh tensors (kept alive), a non-contiguous input
        # and a Parameter capture nothing, each equal to the eager forward; the fresh ones and the strided one take
        # the fast path each time (no full path to a capture that cannot happen)
        fresh = [hid() for _ in range(2)]
        wide = torch.randn(2, 5, 2 * cfg.hidden_size, generator=g).to(device, BF16)[..., ::2]
        param = torch.nn.Parameter(hid(), requires_grad=False)
        others = (*fresh, wide, param)
        ref = [eager(h) for h in others]
        for h, r in zip(others, ref):
            same(fast(h), r)
        n = len(checks)
        for k in (0, 1, 0, 1, 2):
            same(fast(others[k]), ref[k])
            assert replays[-1] == "kernels"
        assert counts() == (n, 4) and len(fast._addressed_graphs) == 3 and len(fast._prefill_graphs) == 1
        # the switch off: no addressed graph replayed, none captured; "whole" graphs: none replayed
        fast.prefill_address_graphs = False
        same(fast(hs[1]), want[1])
        assert replays[-1] == "kernels" and counts()[1] == 4
        fast.prefill_address_graphs = True
        bound = set(fast._prefill_addressed)
        # the other graphs' LRU is apart: a "whole" capture that drops the kernels graph drops no addressed one
        monkeypatch.setattr(layer_module, "_MAX_PREFILL_GRAPHS", 1)
        fast.prefill_graphs = "whole"
        same(fast(hs[1]), want[1])
        assert replays[-1] == "whole" and [e.graph_mode for e in fast._prefill_graphs.values()] == ["whole"]
        fast.prefill_graphs = "mapped"
        assert set(fast._prefill_addressed) == bound == addressed()
        for i in (1, 2):  # (hs[0]'s graph now the least recently replayed)
            same(fast(hs[i]), want[i])
            assert replays[-1] == "addressed"
        # a shape's pool goes with its last pooled graph: another shape's kernels graph gets a pool, which a "whole"
        # graph of that shape (on no pool) taking its place does not keep; this shape's kernels graph, captured
        # again, gets the pool its addressed graphs kept
        one, pooled = hid(1), [(tuple(hs[0].shape), BF16, hs[0].device)]
        want_one = eager(one)
        same(fast(one), want_one)
        assert [e.key[:3] for e in fast._prefill_graphs.values()] == [(tuple(one.shape), BF16, one.device)]
        assert len(fast._prefill_pools) == 2
        fast.prefill_graphs = "whole"
        same(fast(one), want_one)
        fast.prefill_graphs = "mapped"
        assert replays[-1] == "whole" and captures[-1] is None and list(fast._prefill_pools) == pooled
        same(fast(fresh[1]), ref[1])
        assert replays[-1] == "kernels" and captures[-1] is captures[0] and list(fast._prefill_pools) == pooled
        # an idle addressed graph gives way at the bound: with the least recently replayed one (hs[0]'s) idle for
        # one replay fewer, fresh[0] (seen just before) takes the kernels graph; idle for the bound, fresh[0]'s
        # address captures in place of it, and hs[0]'s binding goes with it
        oldest = next(iter(fast._addressed_graphs.values()))
        assert oldest.key[-1] == hs[0].data_ptr()
        idle = fast._prefill_replays - oldest.last_replay
        monkeypatch.setattr(layer_module, "_ADDRESSED_IDLE_REPLAYS", idle + 1)
        n = len(captures)
        same(fast(fresh[0]), ref[0])
        assert replays[-1] == "kernels" and len(captures) == n
        same(fast(fresh[0]), ref[0])
        gone = bound - set(fast._prefill_addressed)
        assert replays[-1] == "addressed" and len(captures) == n + 1 and gone == {(hs[0].data_ptr(), hs[0].shape)}
        assert set(fast._prefill_addressed) == addressed() and len(addressed()) == 3
        # an address last seen longer ago than the bound does not capture in place of an idle graph (hs[1]'s, idle
        # while hs[2] and fresh[0] replay): hs[0]'s first call takes the kernels graph, its next (seen just before)
        # captures in place of hs[1]'s
        for k in range(idle + 1):
            h, w = (hs[2], want[2]) if k % 2 else (fresh[0], ref[0])
            same(fast(h), w)
            assert replays[-1] == "addressed"
        same(fast(hs[0]), want[0])
        assert replays[-1] == "kernels" and len(captures) == n + 1
        same(fast(hs[0]), want[0])
        assert replays[-1] == "addressed" and len(captures) == n + 2
        held = {(h.data_ptr(), h.shape) for h in (hs[0], hs[2], fresh[0])}
        assert set(fast._prefill_addressed) == addressed() == held
        # room again (a larger bound): the remembered address captures its graph on its next call
        monkeypatch.setattr(layer_module, "_MAX_ADDRESSED_GRAPHS", 4)
        same(fast(hs[1]), want[1])
        assert replays[-1] == "addressed" and len(captures) == n + 3 and len(addressed()) == 4
        # with room in the LRU, the strided input and the Parameter (each seen before) still capture nothing
        monkeypatch.setattr(layer_module, "_MAX_ADDRESSED_GRAPHS", 8)
        for h, r in ((wide, ref[2]), (param, ref[3])):
            same(fast(h), r)
            assert replays[-1] == "kernels" and len(captures) == n + 3
        assert orders == replays  # (every replay but the "mapped" ones ordered first)
        # calls at a bound address that the argument check refuses get the reference's errors
        assert (hs[0].data_ptr(), hs[0].shape) in fast._prefill_addressed
        with pytest.raises(TypeError, match="dtype"):
            fast(hs[0].view(torch.float16))
        fast.in_proj.float()
        with pytest.raises(TypeError, match="does not match the layer weights"):
            fast(hs[0])
    fast.in_proj.to(BF16)
    clone = copy.deepcopy(fast)
    assert not clone._prefill_addressed and not clone._addressed_graphs and not clone._seen_addresses
    assert not clone._prefill_pools
    fast.clear_graphs()  # (a replaced parameter: the documented step)
    assert not fast._prefill_addressed and not fast._addressed_graphs and not fast._seen_addresses
    assert not fast._prefill_pools
    with torch.no_grad():
        same(fast(hs[0]), want[0])


def test_addressed_prefill_with_a_stand_in_graph(monkeypatch):
    _stand_in_graphs(monkeypatch)
    _check_addressed_prefill("cpu", monkeypatch)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_addressed_prefill_cuda(monkeypatch):
    _check_addressed_prefill("cuda", monkeypatch)


def test_decode_bindings_hold_no_cache_alive_and_follow_the_graph_lru(tiny, monkeypatch):
    """Bindings hold no reference to a cache (a dropped cache is freed), are cleared with the graphs when the
    layer moves, and never outnumber the graphs' bound."""
    import gc
    import weakref

    from ssmkit.granite import layer as layer_module

    if torch.cuda.is_available():
        pytest.skip("CPU stand-in for graph capture (the CUDA tests cover real graphs)")

    class NoReplay:  # like a CUDA graph, it holds no Python reference to the captured tensors
        def replay(self):
            pass

    monkeypatch.setattr(layer_module, "capture_graph", lambda warm_up, body, device, pool=None: (NoReplay(), warm_up()))
    monkeypatch.setattr(layer_module, "_can_capture", lambda hidden_states: True)
    monkeypatch.setattr(layer_module, "_MAX_DECODE_GRAPHS", 2)
    fast = FastMambaLayer(tiny).to(BF16)
    fast.load_state_dict(synthetic_slice(tiny, 53).mamba)
    h = torch.randn(1, 1, tiny.hidden_size).to(BF16)
    with torch.no_grad():
        _, cache = fast(torch.randn(1, 3, tiny.hidden_size).to(BF16))
        caches = [cache.clone() for _ in range(3)]
        for c in caches:
            fast(h, c)
    assert len(fast._decode_graphs) == 2 and len(fast._decode_bound) == 2
    assert all(b.graph in fast._decode_graphs.values() for b in fast._decode_bound.values())
    dead = weakref.ref(caches[-1])
    del caches[-1], c
    gc.collect()
    assert dead() is None
    fast.float()
    assert not fast._decode_bound and not fast._decode_graphs
