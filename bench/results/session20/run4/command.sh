#!/usr/bin/env bash
# Session 20 run 4: `granite bench` of the unchanged Granite layer (no Granite change since session 12's code), to
# refresh its figures (the last were session 14's).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== granite bench ($SECONDS s)"
timeout 200 python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py --json "$OUT/granite_bench.json" \
  > "$OUT/granite_bench.log" 2>&1; echo "rc=$?"; tail -12 "$OUT/granite_bench.log"
echo "== done ($SECONDS s)"
