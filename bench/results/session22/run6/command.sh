#!/usr/bin/env bash
# Session 22 run 6 (device, one call): the judge of experiments v19 again, after the manifest fix (run 5's judge
# refused it: harness/granite_bench.py had changed without the manifest).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== mamba3 judge, experiments v19 ($SECONDS s)"
timeout 200 python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v19/solver.py \
  --json "$OUT/mamba3_judge.json" > "$OUT/mamba3_judge.log" 2>&1; echo "rc=$?"; tail -14 "$OUT/mamba3_judge.log"
echo "== done ($SECONDS s)"
