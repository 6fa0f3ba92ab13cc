#!/usr/bin/env bash
# Session 22 run 11 (device, one call; bench/_ab carried): the session's final Mamba-3 code (the chunk-state kernel at
# 4 warps uncapped; 16 tokens per GQA-reduce program of the finish kernel) through the public entry (graph) against
# 6d5c8d2's package (ssmkit_s21) at every visible case; CUDA tests of the graph and sincos.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== A/B public entry, graph ($SECONDS s)"
timeout 200 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s21 --out $OUT/ab_graph 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json" | cut -c1-220
echo "== CUDA tests ($SECONDS s)"
timeout 150 python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py tests/mamba3/test_sincos.py 2>&1 | tail -2
echo "== done ($SECONDS s)"
