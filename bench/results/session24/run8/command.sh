#!/usr/bin/env bash
# Session 24 run 8 (device, one call): CUDA tests after the session's changes: the Mamba-3 graph tests (the new
# stream-priority test included), and the Granite fast-layer and MappedIO CUDA tests (capture_graph gained a
# priority argument; Granite's graphs keep the default).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== Mamba-3 graph CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -p no:cacheprovider -p no:warnings tests/mamba3/test_graph_cuda.py 2>&1 | tail -3
echo "== Granite / MappedIO CUDA tests ($SECONDS s)"
timeout 300 python -m pytest -q -p no:cacheprovider -p no:warnings tests/granite/test_fast_layer.py tests/kernels/common tests/kernels/granite -k cuda 2>&1 \
  | tail -3
echo "== done ($SECONDS s)"
