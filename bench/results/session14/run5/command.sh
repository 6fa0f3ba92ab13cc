#!/usr/bin/env bash
# Session 14 run 5 (device, one call): the Mamba-3 side kernels at 8 warps with register caps (offline: 206
# registers uncapped = 1 program per SM; cap 128 = 2 programs of 8 warps with 71 spill instructions; cap 168 = no
# spills, 1 program), against the default (4 warps, 255 registers, 2 programs), one process.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== mamba3 bwd config sweep ($SECONDS s)"
timeout 300 python bench/mamba3_config_sweep.py --out "$OUT" --cases c1_four_mixed,c4_short_and_longest,c8_small_three \
  --configs '[{"side_warps": 8, "side_maxnreg": 128}, {"side_warps": 8, "side_maxnreg": 168}, {"side_warps": 8}, {"side_warps": 8, "side_maxnreg": 112}]' \
  > "$OUT/mamba3_sweep.log" 2>&1; echo "rc=$?"; grep -vi "warn" "$OUT/mamba3_sweep.log" | tail -30
echo "== done ($SECONDS s)"
