#!/usr/bin/env bash
# Session 38 run 1 (prepared in session 37 as run 3) (device, one call): main's Mamba-3 code on a GPU after session 36's review mend (9cb0532: the
# graph's slot copy forked and joined in `_launch_into`'s copy_in; the same launches on the same streams in the same
# order), which no device call had run. 1. the graph CUDA tests; 2. `mamba3 judge` of experiments v30 (the single-file
# export of this code) in its isolated worker; 3. `mamba3 selfcheck`.
# Predictions: 1. pass (4 of 4); 2. PASS, G near v28's 43.22 (the judge's G moves with the eager reference's time on
# the host); 3. PASS, errors as session 36's (the same bits), G near 51.75.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s38r1; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
pack() { tar czf "$OUT/run1.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== 1. graph CUDA tests ($SECONDS s)"
timeout $(cap 90) python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py > $W/pytest_cuda.log 2>&1
echo "rc=$?"; tail -1 $W/pytest_cuda.log; grep -E "FAILED|Error" $W/pytest_cuda.log | head -8; pack
echo "== 2. judge v30 ($SECONDS s)"
timeout $(cap 270) python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v30/solver.py \
  --json $W/judge_v30.json > $W/judge_v30.log 2>&1; echo "rc=$?"; tail -12 $W/judge_v30.log; pack
echo "== 3. mamba3 selfcheck ($SECONDS s)"
timeout $(cap 180) python -m ssmkit.cli mamba3 selfcheck --json $W/mamba3_selfcheck.json > $W/mamba3_selfcheck.log 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" $W/mamba3_selfcheck.log | tail -12; pack
if grep -q H200 $W/gpu.txt; then  # added in session 38: the issues' targets were set on an H200, and no figure of
  # main's current code on one exists (sessions 28-37 ran on H100s). Predictions: queued 0.40-0.47 ms at c1-c7;
  # granite bench as session 33's H200 run (0.385 / 1.231 / 1.169 ms, decode 0.055 / 0.073 / 0.141 in its A/B).
  echo "== 4. H200: graph queued time of main's public entry ($SECONDS s)"
  timeout $(cap 150) python bench/mamba3_ab.py --graph --scales 1 --out $W/ab_graph 2>&1 | grep -v "Warn\|warn(" \
    | grep -E "^c[0-9]|json|rror" | cut -c1-300; pack
  echo "== 5. H200: granite bench ($SECONDS s)"
  timeout $(cap 200) python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py \
    --json $W/granite_bench.json > $W/granite_bench.log 2>&1
  echo "rc=$?"; grep -v "Warn\|warn(" $W/granite_bench.log | tail -14; pack
fi
echo "== done ($SECONDS s)"
