#!/usr/bin/env bash
# Session 39 run 7 (device, one call): main with the chunk-state kernel capped at 128 registers (the one change kept
# this session, run 6) through the checks a change of defaults needs on a GPU: the graph CUDA tests, `mamba3
# selfcheck`, and main's public entry, direct against its graph (queued time, median of 6 alternating rounds).
# Predictions: 4 of 4 pass; selfcheck PASS with session 38's errors (the same bits); queued through the graph
# 0.43-0.50 ms at c1-c7, 0.16 at c8 on an H100 (0.36-0.42 at c1-c7 if an H200 comes).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s39r7; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
echo "bash bench/results/session39/run7/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run7.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== 1. graph CUDA tests ($SECONDS s)"
timeout $(cap 90) python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py > $W/pytest_cuda.log 2>&1
echo "rc=$?"; tail -1 $W/pytest_cuda.log; grep -E "FAILED|Error" $W/pytest_cuda.log | head -8; pack
echo "== 2. public entry, direct vs graph ($SECONDS s)"
timeout $(cap 120) python bench/mamba3_ab.py --graph --scales 1 --out $W/ab_graph 2>&1 | grep -v "Warn\|warn(" \
  | grep -E "^c[0-9]|json|rror" | cut -c1-300; pack
echo "== 3. mamba3 selfcheck ($SECONDS s)"
timeout $(cap 180) python -m ssmkit.cli mamba3 selfcheck --json $W/mamba3_selfcheck.json > $W/mamba3_selfcheck.log 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" $W/mamba3_selfcheck.log | tail -11; pack
echo "== done ($SECONDS s)"
