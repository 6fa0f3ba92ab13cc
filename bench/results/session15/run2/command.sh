#!/usr/bin/env bash
# Session 15 run 2 (device, one call): the leaner side kernels (b4ddc99) under register caps (config sweep, direct
# launches: default vs side_maxnreg 168 (3 programs per SM, 147 spill instructions offline) and 128); mamba3
# selfcheck (accuracy against float64 on every visible case, speedup over the eager baseline); the backward's
# per-kernel split on one long sequence (8192 / 32768 / 131072 tokens: how each kernel grows with length).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== side register caps ($SECONDS s)"
timeout 200 python bench/mamba3_config_sweep.py --out "$OUT" --cases c1_four_mixed,c4_short_and_longest,c8_small_three \
  --configs '[{"side_maxnreg": 168}, {"side_maxnreg": 128}]' > "$OUT/sweep.log" 2>&1; echo "rc=$?"
grep -vi "warn" "$OUT/sweep.log" | grep -iE "sides|^c[0-9]|config|bwd" | head -30
echo "== mamba3 selfcheck ($SECONDS s)"
timeout 120 python -m ssmkit.cli mamba3 selfcheck --json "$OUT/mamba3_selfcheck.json" > "$OUT/mamba3_selfcheck.log" 2>&1
echo "rc=$?"; tail -6 "$OUT/mamba3_selfcheck.log"
echo "== long backward ($SECONDS s)"
timeout 200 python bench/mamba3_long_fwd.py --bwd --out "$OUT" > "$OUT/long.log" 2>&1; echo "rc=$?"; grep "^T=" "$OUT/long.log"
tar czf "$OUT/logs.tgz" -C "$OUT" sweep.log mamba3_selfcheck.log long.log
echo "== done ($SECONDS s)"
