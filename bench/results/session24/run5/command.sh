#!/usr/bin/env bash
# Session 24 run 5 (device, one call): the Mamba-3 graph's stream priorities with the capture stream's too
# (STREAM_PRIORITIES = (capture, side 1, side 2)): (0, 0, 0) against (0, -1, 0) (run 4's), (-1, -1, 0) and
# (-1, -2, 0) (the dz gate on the lowest stream), six visible panels, two processes (mamba3_ab.py --stream-priorities).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
for rep in 1 2; do
  echo "== stream priorities, process $rep ($SECONDS s)"
  mkdir -p $OUT/rep$rep
  timeout 280 python bench/mamba3_ab.py --stream-priorities '[[0, -1, 0], [-1, -1, 0], [-1, -2, 0]]' \
    --cases c1_four_mixed,c2_three_long,c4_short_and_longest,c5_three_even,c6_two_short_two_long,c8_small_three \
    --out $OUT/rep$rep 2>&1 | grep -v "Warn\|warn(" | grep "wall"
done
echo "== done ($SECONDS s)"
