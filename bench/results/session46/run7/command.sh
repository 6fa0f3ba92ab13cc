#!/usr/bin/env bash
# Session 46 run 7 (device, one call): the two judges of main's code on an H200, the issues' card, only if one comes
# (on any other card the script stops at once: runs 1 and 2 judged the same files on an H100).
# Predictions: both PASS; Granite G 7-9 (v17 8.17 on an H200), Mamba-3 G 30-45.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=$OUT/run7; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
if ! head -1 $W/gpu.txt | grep -q H200; then echo "not an H200: stop"; exit 0; fi
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session46/run7/command.sh" > $W/command.txt
echo "== granite judge v18 ($SECONDS s)"
timeout 300 python -m ssmkit.cli granite judge --candidate experiments/granite/versions/v18/candidate.py \
  --json $W/granite_judge_v18.json > $W/granite_judge_v18.log 2>&1; echo "rc=$?"; tail -9 $W/granite_judge_v18.log
echo "== mamba3 judge v35 ($SECONDS s)"
timeout 250 python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v35/solver.py \
  --json $W/judge_v35.json > $W/judge_v35.log 2>&1; echo "rc=$?"; tail -11 $W/judge_v35.log
echo "== done ($SECONDS s)"
