"""Load a candidate file: a Granite ``CandidateBlock`` class or a Mamba-3 solver function.

A candidate is one Python file. Granite: it defines ``CandidateBlock`` with ReferenceMambaLayer's constructor
``(config, layer_idx=0)`` and forward ``(hidden_states, cache=None, attention_mask=None) -> (output, cache)``.
Mamba-3: it defines ``mamba3_siso_varlen_joint_states_full_vjp`` with the operator's 17 arguments and 16 results.
Without a file, the defaults are the package's own: ``ReferenceMambaLayer`` and
``ssmkit.mamba3.mamba3_siso_varlen_joint_states_full_vjp``.

The file is executed in this process (verify, bench and selfcheck are developer tools; the judge isolates
candidates in a worker process instead).
"""
from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Callable

GRANITE_ATTRIBUTE = "CandidateBlock"
MAMBA3_ATTRIBUTE = "mamba3_siso_varlen_joint_states_full_vjp"


def load_module(path: str | Path) -> ModuleType:
    """Import the Python file at ``path`` as a fresh module (named after a hash of its resolved path).

    FileNotFoundError if it is missing; ValueError (naming the cause) if importing it raises.
    """
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"candidate file not found: {path}")
    if path.suffix != ".py":
        raise ValueError(f"candidate must be a .py file, got {path}")
    name = "ssmkit_candidate_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise ValueError(f"could not import candidate file {path}: {type(exc).__name__}: {exc}") from exc
    return module


def _attribute(path: str | Path, attribute: str):
    module = load_module(path)
    if not hasattr(module, attribute):
        raise ValueError(f"candidate file {path} does not define '{attribute}'")
    return getattr(module, attribute)


def load_granite_candidate(path: str | Path | None = None) -> type:
    """The ``CandidateBlock`` class of the file at ``path``; ``ReferenceMambaLayer`` when ``path`` is None."""
    if path is None:
        from ssmkit.granite import ReferenceMambaLayer

        return ReferenceMambaLayer
    block = _attribute(path, GRANITE_ATTRIBUTE)
    if not isinstance(block, type):
        raise TypeError(f"{path}: '{GRANITE_ATTRIBUTE}' must be a class (an nn.Module subclass), "
                        f"got {type(block).__name__}")
    return block


def load_mamba3_solver(path: str | Path | None = None) -> Callable:
    """The solver function of the file at ``path``; the package's public entry when ``path`` is None."""
    if path is None:
        from ssmkit.mamba3 import mamba3_siso_varlen_joint_states_full_vjp

        return mamba3_siso_varlen_joint_states_full_vjp
    solver = _attribute(path, MAMBA3_ATTRIBUTE)
    if not callable(solver):
        raise TypeError(f"{path}: '{MAMBA3_ATTRIBUTE}' must be callable, got {type(solver).__name__}")
    return solver
