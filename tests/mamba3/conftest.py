"""Shared fixtures for tests/mamba3.

Every test here runs with one torch CPU thread (restored afterwards): the float64 oracle does hundreds of small
per-token ops, which run many times slower when two intra-op threads contend for a busy 2-core machine.
"""
from contextlib import contextmanager

import pytest
import torch

from ssmkit.mamba3.inputs import make_inputs
from ssmkit.mamba3.oracle import mamba3_siso_varlen_joint_states_full_vjp_oracle
from ssmkit.mamba3.reference import mamba3_siso_varlen_joint_states_full_vjp_reference

#: Ragged panel (lengths 70, 130, 65, 1, 2; seed 0), the first tolerance-calibration case.
PANEL_SEQLENS, PANEL_SEED = [70, 130, 65, 1, 2], 0


@contextmanager
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def single_thread():
    with _one_thread():
        yield


@pytest.fixture(scope="session")
def ragged_panel_case():
    """(PANEL_SEQLENS, PANEL_SEED): a fixture, since a test module's ``from conftest import`` gets whichever
    conftest pytest imported last when other test folders are collected too."""
    return PANEL_SEQLENS, PANEL_SEED


@pytest.fixture(scope="session")
def ragged_panel():
    """(args dict of 17, reference 16 results, float64 oracle 16 results) on the ragged panel; computed once."""
    with _one_thread():  # session fixtures start before the function-scoped single_thread
        args = make_inputs(PANEL_SEQLENS, PANEL_SEED)
        reference = mamba3_siso_varlen_joint_states_full_vjp_reference(**args)
        oracle = mamba3_siso_varlen_joint_states_full_vjp_oracle(**args)
    return args, reference, oracle
