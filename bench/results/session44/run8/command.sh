#!/usr/bin/env bash
# Session 44 run 8 (device, one call): `mamba3 judge` of experiments v35 (main's final Mamba-3 code as one file: v34
# plus the review's mend: the one-stream forward without the carry launch, the graphs kept bounded by their total
# call size; the visible panels' graph path is v34's).
# Prediction (H100): PASS, every check ok; G near v34's 30.82 (run 6), which moves with the eager reference's time.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s44r8; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session44/run8/command.sh" > $W/command.txt
echo "== judge v35 ($SECONDS s)"
timeout 240 python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v35/solver.py \
  --json $W/judge_v35.json > $W/judge_v35.log 2>&1; echo "rc=$?"; tail -12 $W/judge_v35.log
tar czf "$OUT/run8.tgz" -C $W .
echo "== done ($SECONDS s)"
