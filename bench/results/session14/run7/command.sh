#!/usr/bin/env bash
# Session 14 run 7 (device, one call): the judge of experiments v12 (the session's final Mamba-3 code, 4e6f651).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
timeout 190 python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v12/solver.py \
  --json "$OUT/mamba3_judge.json" > "$OUT/mamba3_judge.log" 2>&1; echo "rc=$?"; tail -12 "$OUT/mamba3_judge.log"
