#!/usr/bin/env bash
# Session 39 run 8 (device, one call): `mamba3 judge` of experiments v31 (main's code as one file: v30 with the
# chunk-state kernel capped at 128 registers) in its isolated worker.
# Prediction: PASS; G near session 38's 35.04 for v30 (G moves with the eager reference's time on the host).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s39r8; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
echo "bash bench/results/session39/run8/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run8.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== judge v31 ($SECONDS s)"
timeout $(cap 300) python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v31/solver.py \
  --json $W/judge_v31.json > $W/judge_v31.log 2>&1; echo "rc=$?"; tail -12 $W/judge_v31.log; pack
echo "== done ($SECONDS s)"
