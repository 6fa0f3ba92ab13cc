#!/usr/bin/env bash
# Session 36 run 11 (device, one call, carry ["bench/_ab"]: pkgs/ssmkit_s36v28 = 8bc3805, experiments v28's code;
# remake with `python bench/ab_package.py --commit 8bc3805 --name ssmkit_s36v28`). The graph's copy of the small
# arguments into their static buffers (3.6 us at c1, run 5's timeline: fetch 0-2.1, copy 2.8-6.4, chunk state from
# 6.8) now runs on the first side stream beside the chunk-state kernel, which reads k, adt, dt, trap, k_bias and
# cu_seqlens at their posted addresses itself; the main stream joins the copy after the chunk-state launch. Steps:
# 1. the public entry through its graph against 8bc3805, every visible case; 2. the timeline (c1 / c5 / c8); 3. the
# graph CUDA tests.
# Predictions: 1. every result bit-identical; queued -3 to -5 us per call at every case; 2. the chunk state starting
# ~2.6 us after the fetch's start, the copy beside it; 3. pass.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s36r11; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
pack() { tar czf "$OUT/run11.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== 1. graph A/B against 8bc3805 ($SECONDS s)"
timeout $(cap 120) python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s36v28 --out $W/ab_graph 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|rror" | cut -c1-300; pack
echo "== 2. graph CUDA tests ($SECONDS s)"
timeout $(cap 90) python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py > $W/pytest_cuda.log 2>&1
echo "rc=$?"; tail -1 $W/pytest_cuda.log; grep -E "FAILED|Error" $W/pytest_cuda.log | head -8; pack
echo "== 3. timeline ($SECONDS s)"
timeout $(cap 60) python bench/mamba3_timeline.py --out $W/timeline --cases c1_four_mixed 2>&1 | grep -v "Warn\|warn(" \
  | cut -c1-200; pack
echo "== done ($SECONDS s)"
