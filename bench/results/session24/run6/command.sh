#!/usr/bin/env bash
# Session 24 run 6 (device, one call; bench/_ab carried): the dY half of the gate moved onto the low-priority side
# stream (with the dz half; the chain waits for it) against the package at the previous commit (ssmkit_s24a:
# priorities (-1, -1, 0), dY on side stream 1), all eight panels, two processes (mamba3_ab.py --package); then the
# CUDA tests of the graph.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
for rep in 1 2; do
  echo "== dY gate on the low-priority stream, process $rep ($SECONDS s)"
  mkdir -p $OUT/rep$rep
  timeout 250 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s24a --out $OUT/rep$rep 2>&1 \
    | grep -v "Warn\|warn(" | grep "wall"
done
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -p no:warnings tests/mamba3 -k "cuda or graph" 2>&1 | tail -3
echo "== done ($SECONDS s)"
