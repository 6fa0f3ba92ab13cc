#!/usr/bin/env bash
# Session 20 run 3: judge of experiments v18 (exported at the session's kernels, 77441bf) and `mamba3 selfcheck`.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== mamba3 judge, experiments v18 ($SECONDS s)"
timeout 200 python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v18/solver.py \
  --json "$OUT/mamba3_judge.json" > "$OUT/mamba3_judge.log" 2>&1; echo "rc=$?"; tail -14 "$OUT/mamba3_judge.log"
echo "== mamba3 selfcheck ($SECONDS s)"
timeout 150 python -m ssmkit.cli mamba3 selfcheck --json "$OUT/mamba3_selfcheck.json" > "$OUT/mamba3_selfcheck.log" 2>&1
echo "rc=$?"; tail -12 "$OUT/mamba3_selfcheck.log"
echo "== done ($SECONDS s)"
