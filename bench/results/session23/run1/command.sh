#!/usr/bin/env bash
# Session 23 run 1 (device, one call; bench/_ab carried): the Granite chunk-state kernel split over state columns
# (state_block_n 64 / 32, under the 128 cap or a 96 one; granite_ssd_ab.py against HEAD~'s ssd_prefill.py in
# bench/_ab/g_head, kernels alone, same process).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== granite SSD launches ($SECONDS s)"
timeout 300 python bench/granite_ssd_ab.py --baseline bench/_ab/g_head \
  --variants state_n64,state_n64_cap96,state_n32,state_n32_cap96 --out $OUT/ssd 2>&1 | grep -v "Warn\|warn(" | tail -40
echo "== done ($SECONDS s)"
