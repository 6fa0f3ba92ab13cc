#!/usr/bin/env bash
# Session 36 run 10 (device, one call): the harness's verdicts on this session's final Mamba-3 code (the state
# passing dispatched before the rotate kernel; bits as session 35's). 1. `mamba3 selfcheck` (the fast op against the
# eager reference and the oracle-derived bounds, per-case speedups, G); 2. `mamba3 judge` of experiments v28 (the
# single-file export of this code) in its isolated worker.
# Predictions: 1. PASS, errors as session 35's to the printed digits (same bits), G within the host's noise of
# 48.14; 2. PASS, G near v27's 37.47 (the judge's G moves with the eager reference's time on the host).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s36r10; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
pack() { tar czf "$OUT/run10.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== 1. mamba3 selfcheck ($SECONDS s)"
timeout $(cap 180) python -m ssmkit.cli mamba3 selfcheck --json $W/mamba3_selfcheck.json > $W/mamba3_selfcheck.log 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" $W/mamba3_selfcheck.log | tail -12; pack
echo "== 2. judge v28 ($SECONDS s)"
timeout $(cap 270) python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v28/solver.py \
  --json $W/judge_v28.json > $W/judge_v28.log 2>&1; echo "rc=$?"; tail -12 $W/judge_v28.log; pack
echo "== done ($SECONDS s)"
