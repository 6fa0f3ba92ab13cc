#!/usr/bin/env bash
# Session 37 run 2 (device, one call). The finish kernel's GQA reduce over 2 or 4 programs per 16-token block
# (Mamba3BwdConfig.reduce_split: one tensor, or one tensor's column half, per program; the same sums in the same
# order). Why: at c1 its 137 reduce programs (one per SM) each stream 262 KB of bf16 head rows with 4 warps, so the
# finish kernel (36 us in session 36's timeline, ~74 MB: ~25 us of bytes at 3 TB/s) cannot end before its slowest
# reduce program; 274 / 548 shorter programs spread over the SMs beside the angle programs.
# Steps: 1. graph A/B, default against reduce_split 2, 4, and 4 with 32-token blocks, every visible case;
# 2. the timeline of c1 at the best of them (4).
# Predictions: 1. every result bit-identical; queued -3 to -8 us at c1-c7 for split 4 (c8 -1 to -3), split 2 half
# of that, 32-token blocks level with split 4; 2. the finish kernel 36 -> 28-31 us. 3. (only on an H200, where the
# issue's targets were set and no figure of the current code exists) `mamba3 selfcheck` of the default code.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s37r2; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
pack() { tar czf "$OUT/run2.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== 1. graph A/B of configs ($SECONDS s)"
timeout $(cap 300) python bench/mamba3_ab.py --out $W/ab_configs --configs \
  '[{"reduce_split": 2}, {"reduce_split": 4}, {"reduce_split": 4, "reduce_tokens": 32}]' \
  2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|rror" | cut -c1-300; pack
echo "== 2. timeline ($SECONDS s)"
timeout $(cap 60) python bench/mamba3_timeline.py --out $W/timeline_split4 --cases c1_four_mixed --calls 5 \
  --config '{"reduce_split": 4}' 2>&1 | grep -v "Warn\|warn(" | cut -c1-200; pack
if grep -q H200 $W/gpu.txt; then
  echo "== 3. mamba3 selfcheck on the H200 ($SECONDS s)"
  timeout $(cap 180) python -m ssmkit.cli mamba3 selfcheck --json $W/mamba3_selfcheck.json > $W/mamba3_selfcheck.log 2>&1
  echo "rc=$?"; grep -v "Warn\|warn(" $W/mamba3_selfcheck.log | tail -12; pack
fi
echo "== done ($SECONDS s)"
