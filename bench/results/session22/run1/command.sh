#!/usr/bin/env bash
# Session 22 run 1 (device, one call; bench/_ab carried): the Mamba-3 forward's rotate kernel merged into the state
# passing (`_fwd_rotate_rows`, three forward launches instead of four).
# 1. mamba3_ab.py, direct launches, same process: session 21's kernels (bench/_ab/s21 = 6d5c8d2's fwd.py / bwd.py)
#    against the working tree ("new"); c1, c4, c8; per-kernel split at c1.
# 2. mamba3_config_sweep.py --fwd: the passing's register cap and block_p (168 uncapped: three programs per SM).
# 3. mamba3_ab.py --package: the public entry (graph) against 6d5c8d2's package (ssmkit_s21), every visible case.
# 4. CUDA tests of the Mamba-3 graph and sincos; mamba3_bench.py at scale 1 (errors against float64).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
echo "== A/B direct ($SECONDS s)"
timeout 200 python bench/mamba3_ab.py --baseline bench/_ab/s21 --out $OUT/ab \
  --cases c1_four_mixed,c4_short_and_longest,c8_small_three 2>&1 | grep -v "Warn\|warn(" | tail -40
echo "== fwd config sweep ($SECONDS s)"
timeout 150 python bench/mamba3_config_sweep.py --fwd --out $OUT/sweep --cases c1_four_mixed,c4_short_and_longest \
  --configs '[{"passing_maxnreg": 0}, {"passing_block_p": 32, "passing_maxnreg": 0}, {"passing_block_p": 32, "passing_maxnreg": 168}]' \
  2>&1 | grep -v "Warn\|warn(" | tail -24
echo "== A/B public entry, graph ($SECONDS s)"
timeout 240 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s21 --out $OUT/ab_graph 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json" | cut -c1-220
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py tests/mamba3/test_sincos.py 2>&1 | tail -4
echo "== mamba3 bench ($SECONDS s)"
timeout 220 python bench/mamba3_bench.py --out "$OUT" --commit "$commit" --scales 1 > "$OUT/mamba3_bench.log" 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" "$OUT/mamba3_bench.log" | grep -E "^c[0-9]|targets|json:|worst|error" | head -40
echo "== done ($SECONDS s)"
