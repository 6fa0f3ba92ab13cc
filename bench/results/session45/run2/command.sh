#!/usr/bin/env bash
# Session 45 run 2 (device, one call, after run 1 on the same card): the issues' correctness proofs of main's code
# (unchanged since session 44's 371681f) on the card that comes.
# 1. `granite verify` of the fast layer (117 checks: hidden states, conv and SSM states, readout logits, KL);
# 2. `mamba3 selfcheck` of the tree (the fast op against the eager baseline, every visible case);
# 3. `mamba3 judge` of experiments v35 (main's Mamba-3 code as one file) in its isolated worker.
# Predictions: 1 PASS 117/117 (session 33's H200 and every H100 since); 2-3 PASS with every check ok; G moves with the
# eager reference's time on this host (H100: selfcheck 28.99, judge 33.61 in session 44).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s45r2; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session45/run2/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run2.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== granite verify ($SECONDS s)"
timeout $(cap 150) python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py \
  --json $W/granite_verify.json > $W/granite_verify.log 2>&1; echo "rc=$?"; tail -3 $W/granite_verify.log; pack
echo "== mamba3 selfcheck ($SECONDS s)"
timeout $(cap 150) python -m ssmkit.cli mamba3 selfcheck --json $W/selfcheck.json > $W/selfcheck.log 2>&1
echo "rc=$?"; tail -12 $W/selfcheck.log; pack
echo "== mamba3 judge v35 ($SECONDS s)"
timeout $(cap 260) python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v35/solver.py \
  --json $W/judge_v35.json > $W/judge_v35.log 2>&1; echo "rc=$?"; tail -14 $W/judge_v35.log; pack
echo "== done ($SECONDS s)"
