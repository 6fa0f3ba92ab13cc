#!/usr/bin/env bash
# Session 21 run 3 (device, one call): the Granite judge on experiments v17 (exported at 98ae38c: the conv-apart
# decode at B >= 16).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== granite judge, experiments v17 ($SECONDS s)"
timeout 400 python -m ssmkit.cli granite judge --candidate experiments/granite/versions/v17/candidate.py \
  --json "$OUT/granite_judge.json" > "$OUT/granite_judge.log" 2>&1; echo "rc=$?"; tail -12 "$OUT/granite_judge.log"
echo "== done ($SECONDS s)"
