#!/usr/bin/env bash
# Create .venv (if missing) and install ssmkit with what it needs. Sourced by main.sh and test.sh.
# On a machine with an NVIDIA GPU it keeps whatever torch the interpreter already has (the GPU image ships one);
# elsewhere it installs the CPU build of torch and triton==3.6.0 (the GPU machine's compiler version, so the
# Triton interpreter matches it).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && "$PY" -c "import torch" 2>/dev/null; then
    "$PY" -m venv --system-site-packages .venv     # reuse the image's CUDA torch
  else
    "$PY" -m venv .venv
  fi
fi
VPY="$root/.venv/bin/python"
if ! "$VPY" -c "import torch" 2>/dev/null; then
  "$VPY" -m pip install -q "torch==2.13.0" || "$VPY" -m pip install -q torch
fi
# Install only what is missing (a GPU machine's image may already hold all of it and have no network).
if ! "$VPY" -c "import triton, numpy, safetensors, pytest, transformers, huggingface_hub, matplotlib" 2>/dev/null; then
  "$VPY" -m pip install -q "triton==3.6.0" numpy safetensors pytest "transformers==5.17.0" huggingface_hub matplotlib
fi
if ! "$VPY" -c "import ssmkit" 2>/dev/null; then
  "$VPY" -m pip install -q --no-deps -e . || export PYTHONPATH="$root/src${PYTHONPATH:+:$PYTHONPATH}"
fi
export SSMKIT_PY="$VPY"
