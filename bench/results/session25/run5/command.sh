#!/usr/bin/env bash
# Session 25 run 5 (device, one call): the judge of experiments v24 (the session's final Mamba-3 code: bf16 per-head
# dq / dk rows, no copy node after the finish kernel).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== mamba3 judge, experiments v24 ($SECONDS s)"
timeout 220 python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v24/solver.py \
  --json "$OUT/mamba3_judge.json" > "$OUT/mamba3_judge.log" 2>&1; echo "rc=$?"; tail -14 "$OUT/mamba3_judge.log"
echo "== done ($SECONDS s)"
