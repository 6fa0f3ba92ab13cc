#!/usr/bin/env bash
# Session 33 run C (prepared, not run: no device time left). Device, one call, carry [".anchors"] made by
# `bash bench/anchor_setup.sh vllm`. What run B left of issue 5's anchor, and the GEMM probe's new axis:
# 1. `granite verify --candidate bench/granite_vllm_candidate.py` (the vLLM-kernel layer against the harness's
#    tolerances, bf16 on the GPU; its outputs differed from the fast layer's by ~4e-3 norm-relative in run B);
# 2. `granite_gemm_launches.py` through both of torch's CUDA BLAS paths (cuBLAS, cuBLASLt): does either launch
#    in_proj's GEMM without the memset (run B: a memset with the cooperative nvjet kernel in every call form);
# 3. `granite bench` of the vLLM candidate (against the reference: its G beside the fast layer's).
# Predictions: verify passes or fails only on margins (vLLM rounds dt and the norm differently from 5.17); the probe
# (with host times since session 34): the same nvjet kernels through both paths, but two host code paths (a bf16 mm
# takes cublasGemmEx under cuBLAS, gemm_internal_cublaslt under cuBLASLt: bench/granite/NOTES.md "Session 34"),
# host 10-30 us per in_proj call; the bench's vLLM rows near run B's (0.50 / 1.67 / 1.78 ms, 0.07 / 0.10 / 0.17 ms).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s33rC; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
cat .anchors/vllm_ops/REVISION > $W/vllm_revision.txt
pack() { tar czf "$OUT/runC.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== granite verify, vLLM candidate ($SECONDS s)"
timeout $(cap 240) python -m ssmkit.cli granite verify --candidate bench/granite_vllm_candidate.py \
  --json $W/granite_verify_vllm.json > $W/granite_verify_vllm.log 2>&1; echo "rc=$?"
grep -v -i "warn\|Using default" $W/granite_verify_vllm.log | tail -4; pack
echo "== projection GEMM launches, cuBLAS and cuBLASLt ($SECONDS s)"
timeout $(cap 90) python bench/granite_gemm_launches.py --calls 30 --out $W/gemm_launches.json 2>&1 \
  | grep -v -i warn | tail -64; pack
echo "== granite bench, vLLM candidate ($SECONDS s)"
timeout $(cap 240) python -m ssmkit.cli granite bench --candidate bench/granite_vllm_candidate.py \
  --json $W/granite_bench_vllm.json > $W/granite_bench_vllm.log 2>&1; echo "rc=$?"
grep -v -i "warn\|Using default" $W/granite_bench_vllm.log | tail -10; pack
echo "== done ($SECONDS s)"
