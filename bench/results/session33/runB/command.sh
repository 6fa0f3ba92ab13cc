#!/usr/bin/env bash
# Session 33 run B (device, one call, carry [".anchors"] made by `bash bench/anchor_setup.sh vllm`), in the device
# time run A left (~8 minutes with the start): issue 5's VLLM column on the same machine, then the GEMM probe.
# 1. the fast layer against the layer composed from vLLM 0.33's Mamba-2 Triton kernels
#    (bench/granite_vllm_candidate.py), paired A/B/B/A per bench workload as `granite bench` times
#    (`granite_candidate_ab.py`, 32 pairs, one call a side; A = the fast layer, B = vLLM; A/B above 1: vLLM faster;
#    its autotuned SSD kernels compile and tune on first use; the JSON is written after each workload);
# 2. `granite_gemm_launches.py`: which kernels each form of the projection GEMMs launches (run A showed a memset
#    4.6-5.5 us before in_proj's GEMM and ~28 us of host in `_in_proj`).
# Each step gets what is left of $BUDGET s (default 330) at most; outputs are packed after each.
# Predictions: the vLLM layer's prefill behind the fast layer's by 0-15 % (issue: vLLM in a graph 0.42 / 1.29-1.49 /
# 1.23 ms on an H200, plus this harness's host time); decode within ~10 us of the fast layer's at B = 1 / 8 / 64.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s33rB; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
cat .anchors/vllm_ops/REVISION > $W/vllm_revision.txt
pack() { tar czf "$OUT/runB.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-330} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== fast layer vs vLLM layer A/B ($SECONDS s)"
timeout $(cap 270) python bench/granite_candidate_ab.py --a candidates/granite_fast.py \
  --b bench/granite_vllm_candidate.py --out $W/granite_candidate_ab.json > $W/granite_candidate_ab.log 2>&1
echo "rc=$?"; grep -v -i "warn\|Using default" $W/granite_candidate_ab.log | tail -12; pack
echo "== projection GEMM launches ($SECONDS s)"
timeout $(cap 60) python bench/granite_gemm_launches.py --calls 30 --out $W/gemm_launches.json 2>&1 \
  | grep -v -i warn | tail -30; pack
echo "== done ($SECONDS s)"
