#!/usr/bin/env bash
# Session 25 run 3 (device, one call): the session's final Mamba-3 code: `mamba3 selfcheck`, the judge of
# experiments v23 (the single-file export of it).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== mamba3 selfcheck ($SECONDS s)"
timeout 150 python -m ssmkit.cli mamba3 selfcheck --json "$OUT/mamba3_selfcheck.json" > "$OUT/mamba3_selfcheck.log" 2>&1
echo "rc=$?"; tail -3 "$OUT/mamba3_selfcheck.log"
echo "== mamba3 judge, experiments v23 ($SECONDS s)"
timeout 220 python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v23/solver.py \
  --json "$OUT/mamba3_judge.json" > "$OUT/mamba3_judge.log" 2>&1; echo "rc=$?"; tail -14 "$OUT/mamba3_judge.log"
echo "== done ($SECONDS s)"
