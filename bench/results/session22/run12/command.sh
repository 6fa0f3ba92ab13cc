#!/usr/bin/env bash
# Session 22 run 12 (device, one call): the judge of experiments v20 (e2fcd72's kernels: v19 plus 16 tokens per
# GQA-reduce program).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== mamba3 judge, experiments v20 ($SECONDS s)"
timeout 200 python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v20/solver.py \
  --json "$OUT/mamba3_judge.json" > "$OUT/mamba3_judge.log" 2>&1; echo "rc=$?"; tail -12 "$OUT/mamba3_judge.log"
echo "== done ($SECONDS s)"
