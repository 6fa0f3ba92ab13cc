#!/usr/bin/env bash
# Session 23 run 7 (device, one call): mamba3_bench.py at the visible panels and at 2x and 4x their lengths
# (forward-only, backward-only and full call; errors against float64) at the session's final Mamba-3 code.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
echo "== mamba3 bench ($SECONDS s)"
timeout 500 python bench/mamba3_bench.py --out "$OUT" --commit "$commit" --scales 1,2,4 > "$OUT/mamba3_bench.log" 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" "$OUT/mamba3_bench.log" | grep -E "^c[0-9]|targets|json:" | grep -v deterministic | head -30
echo "== done ($SECONDS s)"
