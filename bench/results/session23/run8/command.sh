#!/usr/bin/env bash
# Session 23 run 8 (device, one call; bench/_ab carried): the review's mend of the forward chunk-state kernel (the
# scale s and the decay as one per-token factor on the k tiles, one multiply per element instead of two; offline
# 2448 -> 2216 SASS, 127 registers): direct launches against a8870ef's kernels (bench/_ab/s23), the CUDA tests of
# the graph and sincos, and mamba3_bench at the visible panels (errors against float64).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
echo "== A/B direct ($SECONDS s)"
timeout 200 python bench/mamba3_ab.py --baseline bench/_ab/s23 --out $OUT/ab \
  --cases c1_four_mixed,c4_short_and_longest,c8_small_three 2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json" | cut -c1-200
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py tests/mamba3/test_sincos.py 2>&1 | tail -2
echo "== mamba3 bench ($SECONDS s)"
timeout 200 python bench/mamba3_bench.py --out "$OUT" --commit "$commit" --scales 1 > "$OUT/mamba3_bench.log" 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" "$OUT/mamba3_bench.log" | grep -E "deterministic" | head -3 | cut -c1-260
echo "== done ($SECONDS s)"
