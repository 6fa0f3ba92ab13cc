#!/usr/bin/env bash
# Session 13 run 2 (device, one call): the judged files at this session's code. Granite CUDA layer tests (with the
# new guessed-prefill test on side streams), the Granite judge on experiments v16 (exported at the session-12
# code, unchanged since ad44bba), the Mamba-3 judge on experiments v10 (the _fwd_sincos forward).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== granite CUDA layer tests ($SECONDS s)"
timeout 170 python -m pytest -q -p no:warnings -rA tests/granite/test_fast_layer.py > "$OUT/pytest_cuda.log" 2>&1
echo "rc=$?"; grep -E "passed|failed|FAILED|Error|side_streams" "$OUT/pytest_cuda.log" | tail -6
echo "== mamba3 judge, experiments v10 ($SECONDS s)"
timeout 150 python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v10/solver.py \
  --json "$OUT/mamba3_judge.json" > "$OUT/mamba3_judge.log" 2>&1; echo "rc=$?"; tail -12 "$OUT/mamba3_judge.log"
echo "== granite judge, experiments v16 ($SECONDS s)"
timeout 250 python -m ssmkit.cli granite judge --candidate experiments/granite/versions/v16/candidate.py \
  --json "$OUT/granite_judge.json" > "$OUT/granite_judge.log" 2>&1; echo "rc=$?"; tail -12 "$OUT/granite_judge.log"
tar czf "$OUT/logs.tgz" -C "$OUT" pytest_cuda.log mamba3_judge.log granite_judge.log
echo "== done ($SECONDS s)"
