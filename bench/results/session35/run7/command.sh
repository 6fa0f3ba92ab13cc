#!/usr/bin/env bash
# Session 35 run 7 (device, one call, carry [".anchors"] made by `bash bench/anchor_setup.sh vllm`): issue 5's
# "ahead of the vLLM-kernel layer on every workload" on the H100 this session's calls get, in one process
# (`granite_candidate_ab.py`, 32 pairs of one call a side, A = the fast layer, B = the vLLM-kernel layer; session
# 33 measured it on an H200 only: 1.16-1.53x). Prediction: the fast layer ahead on all six workloads, by 1.1-1.5x;
# the outputs' difference ~4e-3 norm-relative (both bf16) as on the H200.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s35r7; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
cat .anchors/vllm_ops/REVISION > $W/vllm_revision.txt
pack() { tar czf "$OUT/run7.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== fast layer vs vLLM-kernel layer, same process ($SECONDS s)"
timeout $(cap 300) python bench/granite_candidate_ab.py --a candidates/granite_fast.py \
  --b bench/granite_vllm_candidate.py --out $W/granite_candidate_ab.json > $W/granite_candidate_ab.log 2>&1
echo "rc=$?"; grep -v -i "warn\|Using default" $W/granite_candidate_ab.log | tail -12; pack
echo "== done ($SECONDS s)"
