#!/usr/bin/env bash
# Session 25 run 1 (device, one call; bench/_ab carried): the GQA head sum of dq / dk moved from the finish kernel
# into the side kernel's last arriving program (Mamba3BwdConfig.head_sum "sides"). CUDA graph tests; direct
# launches against session 24's kernels (bench/_ab/s24 = 154b9f2, per-kernel split); the public entry through its
# graph against session 24's package (ssmkit_s24) at every visible panel; errors against float64.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
echo "== CUDA tests ($SECONDS s)"
timeout 240 python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py 2>&1 | tail -2
echo "== A/B direct launches, kernels ($SECONDS s)"
timeout 200 python bench/mamba3_ab.py --baseline bench/_ab/s24 --cases c1_four_mixed,c4_short_and_longest,c8_small_three \
  --out $OUT/ab_direct 2>&1 | grep -v "Warn\|warn(" | cut -c1-260
echo "== A/B public entry, graph ($SECONDS s)"
timeout 220 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s24 --out $OUT/ab_graph 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json" | cut -c1-220
echo "== mamba3 bench ($SECONDS s)"
timeout 200 python bench/mamba3_bench.py --out "$OUT" --commit "$commit" --scales 1 > "$OUT/mamba3_bench.log" 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" "$OUT/mamba3_bench.log" | grep -E "^c[0-9]|targets|worst|json:" | head -24
echo "== done ($SECONDS s)"
