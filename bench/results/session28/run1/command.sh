#!/usr/bin/env bash
# Session 28 run 1 (device, one call), on main (session 27's code: the intra kernel loads the forward's masked scores
# and q^.k^, capped at 168 registers), bench/_ab carried: pkgs/ssmkit_s26main is main's package at 59c8e0e (session
# 26), pkgs/ssmkit_s28fs and ssmkit_s28rw the branches s28-finish-split and s28-rotate-walk
# (remake: python bench/ab_package.py --commit REF --name NAME).
# Session 27's run 3 (not made: no device start succeeded; its command is this one's steps 0-4), with two branches
# in the A/B:
#   0. the CUDA graph tests with the cap as default;
#   1. the public entry through its graph against session 26's main and the two branches, every visible panel.
#      s28-finish-split: the finish kernel's GQA reduce sums dq and dk in programs of their own (2 ceil(T/16)
#      programs instead of ceil(T/16), each streaming one tensor's 32 head rows), the same bits. s28-rotate-walk:
#      the rotate kernel's carry walk loads four angle sums at a time, and the state passing issues its loads two
#      chunks ahead (one before), the same bits;
#   2. mamba3_bench (errors against float64, GPU and wall per case);
#   3. the judge of experiments v25 (session 27's export);
#   4. session 26's run 2 on this code: the state-gradient chain's chunk-parallel form through the graph.
# Predictions: 1. main -20 to -30 us queued against session 26's main at c1 (run 2: -14 uncapped, -15 more capped);
# s28-finish-split -2 to -6 us against main (the reduce part of the finish kernel, 0.029 ms at c1, streams 36 MB with
# one 4-warp program per SM: latency-bound, so twice the programs in flight); s28-rotate-walk level to -5 us (the
# rotate kernel, 0.040 ms beside the passing's 0.030 in the graph, ends the pair; offline, ptxas had already unrolled
# main's walk four times, so only the passing's deeper loads may count); 2. dv's error 1.74e-3 as in run 2, the
# others unchanged; 4. -5 to -15 us at c1 if the chain's registers starve the scan, up to +5 us if not.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
W=/tmp/s28r1; mkdir -p $W/bench
step0() {
  echo "== 0. CUDA graph tests ($SECONDS s)"
  timeout 110 python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py > $W/pytest_graph_cuda.log 2>&1
  echo "rc=$?"; tail -3 $W/pytest_graph_cuda.log
}
step1() {
  echo "== 1. A/B public entry, graph, against session 26's main and the two branches ($SECONDS s)"
  timeout 200 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s26main --package bench/_ab/pkgs/ssmkit_s28fs \
    --package bench/_ab/pkgs/ssmkit_s28rw --out $W/ab_graph \
    2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json" | cut -c1-260
}
step2() {
  echo "== 2. mamba3 bench ($SECONDS s)"
  timeout 80 python bench/mamba3_bench.py --out $W/bench --commit "$commit" --scales 1 > $W/bench/mamba3_bench.log 2>&1
  echo "rc=$?"; grep -v "Warn\|warn(" $W/bench/mamba3_bench.log | grep -E "^c[0-9]|targets|json:" | sort -u | head -20
}
step3() {
  echo "== 3. mamba3 judge, experiments v25 ($SECONDS s)"
  timeout 170 python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v25/solver.py \
    --json $W/mamba3_judge.json > $W/mamba3_judge.log 2>&1; echo "rc=$?"; tail -14 $W/mamba3_judge.log
}
step4() {
  echo "== 4. the chain's chunk-parallel form, graph ($SECONDS s)"
  timeout 60 python bench/mamba3_ab.py --cases c1_four_mixed,c4_short_and_longest,c5_three_even --out $W/dstate_scan \
    --configs '[{"dstate_scan": true}, {"dstate_scan": true, "scan_block": 2048}]' 2>&1 | grep -v "Warn\|warn(" \
    | grep -v "_warn_once" | cut -c1-400
}
# Steps in the order of STEPS (default: the A/B first, the step that decides the branches); after every step the
# outputs so far are packed, so a call cut short by the device time left keeps what ran.
for s in ${STEPS:-1 0 3 2 4}; do
  declare -F "step$s" > /dev/null || { echo "no step $s (0-4)"; exit 2; }
  "step$s"; tar czf "$OUT/run1.tgz" -C $W .
done
echo "== done ($SECONDS s)"
