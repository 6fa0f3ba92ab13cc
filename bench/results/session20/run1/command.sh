#!/usr/bin/env bash
# Session 20 run 1: dY stored split into bf16 (hi, lo) by the gate kernel, the dots take the halves (sides q half:
# dY S_in; chain / local: dY^T diag(e^l) Q~; intra: G = dY V^T and dv's matrix with D + gamma q^.k^ on its diagonal,
# e = G's diagonal), and the k side's V dS_out without a split of v (exact in bf16). Offline (sm_90): sides per
# branch 2088/1944/2160/2136 -> 1960/1840/1960/1936 SASS, chain loops 685/783 -> 598/687, intra 2880 -> 2928.
# CUDA tests of the graph; same-process A/B against HEAD's kernels (bench/_ab/s20_head), direct launches, c1 / c4;
# a register-cap sweep of the side kernel.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -rfE tests/mamba3/test_graph_cuda.py tests/mamba3/test_sincos.py > "$OUT/pytest_cuda.log" 2>&1
echo "rc=$?"; tail -3 "$OUT/pytest_cuda.log"
echo "== A/B direct ($SECONDS s)"
timeout 200 python bench/mamba3_ab.py --baseline bench/_ab/s20_head --out $OUT/ab \
  --cases c1_four_mixed,c4_short_and_longest 2>&1 | grep -v "Warn\|warn(" | tail -30
echo "== sweep: side register caps ($SECONDS s)"
timeout 150 python bench/mamba3_config_sweep.py --out $OUT/sweep --cases c1_four_mixed,c4_short_and_longest \
  --configs '[{}, {"side_maxnreg": 168}, {"side_maxnreg": 200}]' > $OUT/sweep.log 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" $OUT/sweep.log | tail -12
echo "== done ($SECONDS s)"
