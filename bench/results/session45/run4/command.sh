#!/usr/bin/env bash
# Session 45 run 4 (device, one call on the H200 run 3 left warm, 128-229 s of device time left; given inline, as
# here): issue 5's comparison on the card its bar was set on.
# 1. The fast layer (A) against the vLLM-kernel layer (B) in one process (`granite_candidate_ab.py`, 32 pairs);
# 2. `granite bench` of the fast layer (16 pairs).
# Prediction (H200): 1. ahead on all six workloads by 1.1-1.5x (session 33's H200: 1.16-1.53x); 2. prefill 0.36-0.42 /
# 1.20-1.30 / 1.15-1.25 ms, decode 0.04-0.09 / 0.05-0.08 / 0.10-0.13.
set -u; export PYTHONUNBUFFERED=1 PYTHONPATH=src; W=$OUT/r4; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-a5369f0}" > $W/commit.txt
echo "session 45 run 4 (inline command, see bench/results/session45/run4/command.sh)" > $W/command.txt
cat .anchors/vllm_ops/REVISION > $W/vllm_revision.txt
echo "== A/B"
timeout 100 python bench/granite_candidate_ab.py --a candidates/granite_fast.py --b bench/granite_vllm_candidate.py \
  --out $W/granite_candidate_ab.json > $W/granite_candidate_ab.log 2>&1; echo rc=$?; tail -9 $W/granite_candidate_ab.log
echo "== bench ($SECONDS s)"
timeout 80 python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py --json $W/granite_bench.json \
  > $W/granite_bench.log 2>&1; echo rc=$?; tail -10 $W/granite_bench.log
