#!/usr/bin/env bash
# Session 23 run 3 (device, one call; bench/_ab carried): the Mamba-3 side kernel reading dY and M o G through
# tensor descriptors (TMA copies into shared memory, no LDG + STS staging; run 2's Nsight digest had the kernel's
# LSU pipe at 72 %), direct launches against b079332's kernels (bench/_ab/s22), then the public entry (graph)
# against b079332's package (ssmkit_s22) at every visible case; the CUDA tests of the graph.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== A/B direct ($SECONDS s)"
timeout 200 python bench/mamba3_ab.py --baseline bench/_ab/s22 --out $OUT/ab \
  --cases c1_four_mixed,c4_short_and_longest,c8_small_three 2>&1 | grep -v "Warn\|warn(" | tail -14
echo "== A/B public entry, graph ($SECONDS s)"
timeout 240 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s22 --out $OUT/ab_graph 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json" | cut -c1-220
echo "== CUDA tests of the graph ($SECONDS s)"
timeout 120 python -m pytest -q -x tests/mamba3/test_graph_cuda.py tests/mamba3/test_sincos.py 2>&1 | tail -3
echo "== done ($SECONDS s)"
