#!/usr/bin/env bash
# Session 49 run 5 (device, one call; not run: failed starts, then too little device time; carry [".anchors"], from
# `bash bench/anchor_setup.sh vllm`): issue 5's comparison with the addressed prefill graphs on by default: the
# fast layer (A) against the vLLM-kernel layer (B) in one process (`granite_candidate_ab.py`, 32 pairs).
# Prediction: ahead on all six; the B = 1 prefill ratios up from session 45's (H200: 1.22 / 1.22x; H100 run 1:
# 1.16-1.45x over the six) by ~10 % at 4096 and ~6 % at 16384; the others as before.
set -u; export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; W=$OUT/r5; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
echo "bash bench/results/session49/run5/command.sh" > $W/command.txt
cat .anchors/vllm_ops/REVISION > $W/vllm_revision.txt 2>/dev/null
timeout 300 python bench/granite_candidate_ab.py --a candidates/granite_fast.py --b bench/granite_vllm_candidate.py \
  --out $W/granite_candidate_ab.json > $W/granite_candidate_ab.log 2>&1; echo rc=$?; tail -10 $W/granite_candidate_ab.log
echo "== done ($SECONDS s)"
