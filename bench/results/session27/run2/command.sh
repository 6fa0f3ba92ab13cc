#!/usr/bin/env bash
# Session 27 run 2 (device, one call), on the branch s27-saved-scores (built on s26-intra-live-ranges) with
# bench/_ab carried: bench/_ab/s26main and pkgs/ssmkit_s26main are main's kernels and package at 59c8e0e (session
# 26), bench/_ab/s26br and pkgs/ssmkit_s26br the branch s26-intra-live-ranges' (da47aad; remake:
#   for f in fwd bwd; do git show REF:src/ssmkit/kernels/mamba3/$f.py > bench/_ab/DIR/$f.py; done
#   python bench/ab_package.py --commit REF --name NAME).
# The change (session 26's lead): the forward's chunk scan stores its masked scores decay o A ((C, C) fp32 per
# chunk slot and head, 19.4 MB at c1) and keeps the rotate kernel's q^.k^; the backward's intra kernel loads both
# instead of loading Q~ and forming A = Q~ Ks^T (two tf32 dots) and q~.k~. Offline (sm_90): intra uncapped 199
# registers, 0 spill instructions, 2464 SASS (s26 branch 255 / 0 / 3064; main 255 / 22 / 3088); at the 168 cap
# 0 spill instructions (branch 103, main 355), 2536 SASS; 8 warps / 128: 0 spills. Forward scan at its 168 cap:
# 6 spill instructions, 2200 SASS (main 14 / 2144).
# Predictions: intra 72 -> 55-62 us at c1 uncapped (fewer instructions; it reads the 19.4 MB scores instead of the
# 19.4 MB q~); at the 168 cap (three programs per SM) a further -3 to -8 us; the scan +3 to +6 us (19.4 MB more
# written); per call -5 to -15 us queued at c1 against main.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
W=/tmp/s27r2; mkdir -p $W
echo "== 0. CUDA graph tests ($SECONDS s)"
timeout 100 python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py > $W/pytest_graph_cuda.log 2>&1
echo "rc=$?"; tail -3 $W/pytest_graph_cuda.log
echo "== 3. A/B public entry, graph, against main and the s26 branch ($SECONDS s)"
timeout 150 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s26main --package bench/_ab/pkgs/ssmkit_s26br \
  --out $W/ab_graph 2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json" | cut -c1-260
echo "== 4. mamba3 bench ($SECONDS s)"
mkdir -p $W/bench
timeout 110 python bench/mamba3_bench.py --out $W/bench --commit "$commit" --scales 1 > $W/bench/mamba3_bench.log 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" $W/bench/mamba3_bench.log | grep -E "^c[0-9]|targets|json:" | head -20
echo "== 2. intra caps, graph ($SECONDS s)"
timeout 120 python bench/mamba3_ab.py --cases c1_four_mixed,c4_short_and_longest,c5_three_even --out $W/caps \
  --configs '[{"intra_maxnreg": 168}, {"num_warps": 8, "intra_maxnreg": 128}]' 2>&1 | grep -v "Warn\|warn(" \
  | cut -c1-400
echo "== 1. A/B direct launches, kernels, against main and the s26 branch ($SECONDS s)"
timeout 90 python bench/mamba3_ab.py --baseline bench/_ab/s26main --baseline bench/_ab/s26br \
  --cases c1_four_mixed,c4_short_and_longest --out $W/ab_direct 2>&1 | grep -v "Warn\|warn(" | grep -v "_warn_once" \
  | cut -c1-300
tar czf "$OUT/run2.tgz" -C $W .
echo "== done ($SECONDS s)"
