#!/usr/bin/env bash
# Session 32 run 3 (device, one call, carry [".anchors"] made by `bash bench/anchor_setup.sh vllm`; not run in
# session 32). Issue 5's VLLM column on this machine: the layer composed from vLLM 0.33's Mamba-2 Triton kernels
# (bench/granite_vllm_candidate.py; checked on the CPU in float32 by bench/granite_vllm_smoke.py) beside the fast layer:
# 1. `granite verify --candidate bench/granite_vllm_candidate.py` (bf16 on the GPU: vLLM's numerics against the
#    harness's tolerances; its autotuned SSD kernels tune on first use);
# 2. `granite bench` of the vLLM candidate, then of the fast layer, in this call (same machine, one after the other).
# Predictions: verify passes or fails only on margins (vLLM rounds dt and the norm differently from 5.17); the vLLM
# layer's decode (its graph replayed inside a Python forward, like ours) about level with the fast layer at B = 1 / 8
# (the 25 / 32 us are bare replays) and slower at B = 64; its eager prefill slower than the fast layer's by
# about its host launches (the issue: 1.95 / 1.88 / 1.78 ms eager on an H200).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s32r3; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
cat .anchors/vllm_ops/REVISION > $W/vllm_revision.txt
pack() { tar czf "$OUT/run3.tgz" -C $W .; }
echo "== granite verify, vLLM candidate ($SECONDS s)"
timeout 200 python -m ssmkit.cli granite verify --candidate bench/granite_vllm_candidate.py \
  --json $W/granite_verify_vllm.json > $W/granite_verify_vllm.log 2>&1; echo "rc=$?"
grep -v -i "warn\|Using default" $W/granite_verify_vllm.log | tail -4; pack
echo "== granite bench, vLLM candidate ($SECONDS s)"
timeout 190 python -m ssmkit.cli granite bench --candidate bench/granite_vllm_candidate.py \
  --json $W/granite_bench_vllm.json > $W/granite_bench_vllm.log 2>&1; echo "rc=$?"
grep -v -i "warn\|Using default" $W/granite_bench_vllm.log | tail -10; pack
echo "== granite bench, fast layer ($SECONDS s)"
left=$((585 - SECONDS)); [ $left -gt 60 ] || left=60
timeout $left python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py \
  --json $W/granite_bench_fast.json > $W/granite_bench_fast.log 2>&1; echo "rc=$?"
grep -v -i warn $W/granite_bench_fast.log | tail -10; pack
echo "== done ($SECONDS s)"
