#!/usr/bin/env bash
# Session 35 run 5 (device, one call). 1. The judge of experiments v27 (exported at 31b419e: the chunk scan writes
# dz; run 4 measured it against session 34's main). 2. Launch configs that the change may have moved, through the
# graph, against the defaults, at c1 / c5 / c8: the rotate kernel (on the critical path: 47 us at c1 beside the
# state passing's 38, run 4's profile) at 4 warps, or uncapped; the chunk scan capped at 184 instead of 168.
# Predictions: 1. PASS, G near v26's 40.28 (the worker's timing moves by more than the change's ~2-3 %); 2. each
# within +-5 us of the defaults; a config more than 5 us faster at all three is a lead for a default change.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s35r5; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
pack() { tar czf "$OUT/run5.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== 1. judge v27 ($SECONDS s)"
timeout $(cap 270) python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v27/solver.py \
  --json $W/judge_v27.json > $W/judge_v27.log 2>&1; echo "rc=$?"; tail -12 $W/judge_v27.log; pack
echo "== 2. launch configs ($SECONDS s)"
timeout $(cap 200) python bench/mamba3_ab.py --configs '[{"fwd.rotate_warps": 4}, {"fwd.rotate_maxnreg": 0},
  {"fwd.scan_maxnreg": 184}]' --cases c1_four_mixed,c5_three_even,c8_small_three --out $W/ab_configs 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json" | cut -c1-320; pack
echo "== done ($SECONDS s)"
