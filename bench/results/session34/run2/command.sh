#!/usr/bin/env bash
# Session 34 run 2 (device, one short call, carry [".anchors"] made by `bash bench/anchor_setup.sh vllm`): what fits
# the device time left after the session's failed starts, from session 33's run C, the probe first:
# 1. `granite_gemm_launches.py` through both of torch's CUDA BLAS paths (cuBLAS, cuBLASLt), with the host time each
#    call form takes to return: does either path launch in_proj's GEMM without the memset, or return sooner (the
#    B = 1 prefill's `_in_proj` held 28.6 us of host before the graph's replay, session 33 run A);
# 2. `granite verify --candidate bench/granite_vllm_candidate.py` with the rest of the call.
# Predictions: the same kernels through both paths (torch 2.11 sends bf16 mm to cuBLASLt's nvjet kernels either way),
# host 10-30 us per in_proj call; verify passes or fails only on margins (vLLM rounds dt and the norm differently).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s34r2; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
cat .anchors/vllm_ops/REVISION > $W/vllm_revision.txt
pack() { tar czf "$OUT/run2.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== projection GEMM launches, cuBLAS and cuBLASLt ($SECONDS s)"
timeout $(cap 110) python bench/granite_gemm_launches.py --calls 20 --out $W/gemm_launches.json 2>&1 \
  | grep -v -i warn | tail -64; pack
echo "== granite verify, vLLM candidate ($SECONDS s)"
timeout $(cap 400) python -m ssmkit.cli granite verify --candidate bench/granite_vllm_candidate.py \
  --json $W/granite_verify_vllm.json > $W/granite_verify_vllm.log 2>&1; echo "rc=$?"
grep -v -i "warn\|Using default" $W/granite_verify_vllm.log | tail -6; pack
echo "== done ($SECONDS s)"
