#!/usr/bin/env bash
# Session 24 run 3 (device, one call): the Mamba-3 graph's first side stream (rotate kernel, state-gradient chain)
# at a higher CUDA priority than the capture stream (SIDE_PRIORITIES (-1, 0) against (0, 0)), same process
# (mamba3_ab.py --side-priorities), four visible panels.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== side-stream priorities ($SECONDS s)"
timeout 400 python bench/mamba3_ab.py --side-priorities '[[-1, 0], [-1, -1]]' --out $OUT \
  --cases c1_four_mixed,c4_short_and_longest,c5_three_even,c8_small_three 2>&1 | grep -v "Warn\|warn(" | tail -16
echo "== done ($SECONDS s)"
