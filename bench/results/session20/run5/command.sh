#!/usr/bin/env bash
# Session 20 run 5: CUDA tests of the Mamba-3 graph and sincos at cb53a12 (the session's final kernels, 77441bf's).
mkdir -p $OUT/run5 && PYTHONPATH=src timeout 250 python -m pytest -q -rfE tests/mamba3/test_graph_cuda.py tests/mamba3/test_sincos.py 2>&1 | tail -4 | tee $OUT/run5/pytest_cuda.log
