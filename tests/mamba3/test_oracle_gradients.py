"""The float64 oracle's autograd VJP against central finite differences (spec §7.1), on a tiny ragged case."""
import pytest
import torch

from ssmkit.mamba3.inputs import make_inputs
from ssmkit.mamba3.oracle import mamba3_siso_oracle, mamba3_siso_varlen_joint_states_full_vjp_oracle
from ssmkit.mamba3.shapes import COTANGENT_NAMES, GRAD_NAMES, INPUT_NAMES

STEP = 1e-6
# central differences in float64: truncation ~ STEP^2 * f''' and cancellation ~ 1e-16 / STEP, both far below 1e-7
BOUND = 1e-7


@pytest.fixture(scope="module")
def tiny_case():
    args = {name: x.double() if x.is_floating_point() else x for name, x in make_inputs([3, 1, 4], seed=11).items()}
    results = mamba3_siso_varlen_joint_states_full_vjp_oracle(**args)
    return args, dict(zip(GRAD_NAMES, results[5:]))


def _loss(args):
    """<cotangents, outputs>: its gradient is the VJP the oracle returns."""
    outputs = mamba3_siso_oracle(*(args[name] for name in INPUT_NAMES))
    return sum((args[c] * o).sum() for c, o in zip(COTANGENT_NAMES, outputs))


@pytest.mark.parametrize("name", [name for name in INPUT_NAMES if name != "cu_seqlens"])
def test_oracle_gradient_matches_directional_finite_difference(tiny_case, name):
    args, grads = tiny_case
    direction = torch.randn(args[name].shape, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    plus, minus = dict(args), dict(args)
    plus[name] = args[name] + STEP * direction
    minus[name] = args[name] - STEP * direction
    with torch.no_grad():
        numeric = ((_loss(plus) - _loss(minus)) / (2 * STEP)).item()
    analytic = (grads["d" + name] * direction).sum().item()
    assert abs(numeric - analytic) <= BOUND * max(abs(analytic), 1.0), (name, numeric, analytic)
