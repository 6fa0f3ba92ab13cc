#!/usr/bin/env bash
# Session 13 run 3 (device, one call): the Mamba-3 side kernels over narrower state blocks (Mamba3BwdConfig.
# side_blocks). Same-process A/B: bench/_ab/s13 = d2f73ab's committed fwd.py + bwd.py (64-dim halves before the
# generalisation); nb4 / nb8 = the working tree at 4 / 8 blocks, nb4c168 / nb8c96 the same with register caps 168 /
# 96; "new" = the working tree at its default (2 blocks, which must give s13's bits).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== mamba3 A/B ($SECONDS s)"
timeout 400 python bench/mamba3_ab.py --baseline bench/_ab/s13 --baseline bench/_ab/nb4 --baseline bench/_ab/nb4c168 \
  --baseline bench/_ab/nb8 --baseline bench/_ab/nb8c96 --cases c1_four_mixed,c4_short_and_longest,c8_small_three \
  --out "$OUT" > "$OUT/mamba3_ab.log" 2>&1; echo "rc=$?"; grep -v "Warn\|warn(" "$OUT/mamba3_ab.log" | tail -30
echo "== done ($SECONDS s)"
