"""CPU check of the VLLM anchor candidate's composition (bench/granite_vllm_candidate.py) against the reference.

Runs the candidate and ``ReferenceMambaLayer`` in float32 at the tiny config (chunk 16) under TRITON_INTERPRET=1 on
prefills (unmasked and left-padded, several chunks), multi-token continuations and decode steps, eagerly and then
through the candidate's graph paths (a stand-in for capture whose replay recomputes the body into the static
output, as a replay does), and prints the norm-relative differences of the outputs and both cache states: with the
same math in fp32 they should be ~1e-7 (outputs) to ~1e-6 (states), which checks the glue (layouts, packing, chunk
and conv metadata, the cache's conv columns, state handling). Float32 because the interpreter computes bf16 elementwise arithmetic on raw bits, and
vLLM's conv kernels multiply bf16 loads without upcasting; the bf16 layer is checked on the GPU by `ssmkit granite
verify --candidate bench/granite_vllm_candidate.py`. Two interpreter-only adjustments, no kernel replaced:
Triton's autotuner takes its first config (it cannot benchmark without a GPU), and the prefill conv kernel's grid
function is evaluated before its launch (``GridFirst``: it rewrites the launch's arguments, which the interpreter
takes first); all five vLLM kernels run as they are.
Usage: PYTHONPATH=src python bench/granite_vllm_smoke.py   (after `bash bench/anchor_setup.sh vllm`)
"""
import importlib
import os
import sys
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from triton.runtime import autotuner  # noqa: E402

import granite_vllm_candidate as candidate  # noqa: E402
import ssmkit.kernels  # noqa: E402,F401  (the interpreter's bf16 and range fixes)
from ssmkit.granite.checkpoint import synthetic_slice  # noqa: E402
from ssmkit.granite.config import GraniteMambaConfig  # noqa: E402
from ssmkit.granite.reference import ReferenceMambaLayer  # noqa: E402

TOLERANCE = 1e-5


class GridFirst:
    """A Triton kernel whose launch grid is a function evaluated on the launch's arguments before the launch, as the
    GPU launcher evaluates it: vLLM's conv kernel's grid function rewrites its arguments' dict (the program map),
    which the interpreter builds only after it has taken the arguments."""

    def __init__(self, kernel) -> None:
        self.kernel = kernel

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            shape = grid({**dict(zip(self.kernel.arg_names, args)), **kwargs}) if callable(grid) else grid
            return self.kernel[shape](*args, **kwargs)
        return launch


def stand_in_capture(warm_up, body, device):
    """``capture_graph`` off CUDA as a real capture behaves: the static output comes from the warm-up; a replay
    recomputes the captured body into it."""
    static_out = warm_up()

    class Replay:
        def replay(self):
            static_out.copy_(body())

    return Replay(), static_out


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-30)).item()


def main() -> None:
    autotuner.Autotuner._bench = lambda self, *args, config=None, **kwargs: [0.0, 0.0, 0.0]
    candidate._ops()
    conv = importlib.import_module("vllm.model_executor.layers.mamba.ops.causal_conv1d")
    conv._causal_conv1d_fwd_kernel = GridFirst(conv._causal_conv1d_fwd_kernel)
    cfg = GraniteMambaConfig.tiny(chunk_size=16)
    weights = synthetic_slice(cfg, 3).mamba
    worst = 0.0
    for graphs in (False, True):  # eager; then the graph paths' buffers with a stand-in for capture
        if graphs:
            candidate.capture_graph = stand_in_capture
            candidate.CandidateBlock._graphs_apply = lambda self, hidden_states: True
        layers = [candidate.CandidateBlock(cfg), ReferenceMambaLayer(cfg)]
        for layer in layers:
            layer.load_state_dict(weights)
        g = torch.Generator().manual_seed(1)
        h = torch.randn(3, 37, cfg.hidden_size, generator=g)
        padding = torch.tensor([[0] * (37 - n) + [1] * n for n in (37, 9, 2)])
        for label, mask in (("prefill", None), ("left-padded prefill", padding), ("the same shape again", padding)):
            if label.startswith("the same"):  # (a graph's replay on new inputs: nothing left of the last one)
                h = torch.randn(3, 37, cfg.hidden_size, generator=g)
            cache = ref_cache = None
            for step, length in enumerate((37, 5, 1, 1, 2, 1)):
                x = h if step == 0 else torch.randn(3, length, cfg.hidden_size, generator=g)
                step_mask = mask if step == 0 else None
                out, cache = layers[0](x, cache, step_mask)
                ref_out, ref_cache = layers[1](x, ref_cache, step_mask)
                diffs = (rel(out, ref_out), rel(cache.conv_state, ref_cache.conv_state),
                         rel(cache.ssm_state, ref_cache.ssm_state))
                worst = max(worst, *diffs)
                name = (f"{label}{' (graphs)' if graphs else ''}" if step == 0 else f"  then L={length}")
                print(f"{name:30s} output {diffs[0]:.2e}  conv_state {diffs[1]:.2e}  ssm_state {diffs[2]:.2e}")
    print(f"worst {worst:.2e}: {'PASS' if worst <= TOLERANCE else 'FAIL'} (tolerance {TOLERANCE:g})")
    sys.exit(0 if worst <= TOLERANCE else 1)


if __name__ == "__main__":
    main()
