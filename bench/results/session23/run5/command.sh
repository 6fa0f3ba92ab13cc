#!/usr/bin/env bash
# Session 23 run 5 (device, one call): the judge of experiments v21 (the forward's transposed-operand dots split into
# bf16, 506c1e9's kernels).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== mamba3 judge, experiments v21 ($SECONDS s)"
timeout 300 python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v21/solver.py \
  --json "$OUT/mamba3_judge.json" > "$OUT/mamba3_judge.log" 2>&1; echo "rc=$?"; tail -14 "$OUT/mamba3_judge.log"
echo "== done ($SECONDS s)"
