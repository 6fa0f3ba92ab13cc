#!/usr/bin/env bash
# Session 24 run 4 (device, one call): run 3's side-stream priority A/B again, all eight visible panels, twice
# (two processes), plus (-3, 0): SIDE_PRIORITIES (0, 0) against (-1, 0) and (-3, 0) (mamba3_ab.py --side-priorities).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
for rep in 1 2; do
  echo "== side-stream priorities, process $rep ($SECONDS s)"
  mkdir -p $OUT/rep$rep
  timeout 280 python bench/mamba3_ab.py --side-priorities '[[-1, 0], [-3, 0]]' --out $OUT/rep$rep 2>&1 \
    | grep -v "Warn\|warn(" | grep "wall"
done
echo "== done ($SECONDS s)"
