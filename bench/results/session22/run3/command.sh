#!/usr/bin/env bash
# Session 22 run 3 (device, one call; bench/_ab carried): the Mamba-3 chunk-state kernel at 4 warps (run 2's sweep:
# c1 0.048 -> 0.043 ms, same bits), as the new default, through the public entry (graph) against 6d5c8d2's package
# (ssmkit_s21) at every visible case, and direct against 6d5c8d2's kernels (bench/_ab/s21); then the Granite SSD
# launches with 8 warps for the chunk-state or the scan kernel (granite_ssd_ab.py, against HEAD's ssd_prefill.py).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== A/B public entry, graph ($SECONDS s)"
timeout 240 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s21 --out $OUT/ab_graph 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json" | cut -c1-220
echo "== A/B direct ($SECONDS s)"
timeout 200 python bench/mamba3_ab.py --baseline bench/_ab/s21 --out $OUT/ab \
  --cases c1_four_mixed,c4_short_and_longest,c8_small_three 2>&1 | grep -v "Warn\|warn(" | tail -12
echo "== granite SSD launches ($SECONDS s)"
timeout 200 python bench/granite_ssd_ab.py --baseline bench/_ab/g_head --variants state_8_warps,scan_8_warps \
  --out $OUT/ssd 2>&1 | grep -v "Warn\|warn(" | tail -30
echo "== done ($SECONDS s)"
