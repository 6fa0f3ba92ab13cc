#!/usr/bin/env bash
# Session 45 run 1 (device, one call; carry [".anchors"] made by `bash bench/anchor_setup.sh vllm` and
# `bash bench/anchor_setup.sh mamba3 <mirror of state-spaces/mamba>`): one snapshot of main's code (unchanged since
# session 44's 371681f) on the card that comes; the first H200 call since session 27 if an H200 comes (the card the
# issues' bars were set on).
# 1. `bench/mamba3_bench.py` at scales 1, 2, 4 (issue 6's proof: fwd-only, bwd-only, full call, queued GPU time,
#    the profiler's kernel sum, errors against float64);
# 2. `bench/mamba3_official_ab.py` at c1 / c5 / c8 (the official kernels beside the op in one process), the official
#    configs pinned to session 35's tuning on an H100, tuned afresh (--precompile 14) on any other card;
# 3. `granite bench` of the fast layer (6 workloads, 16 pairs, plot);
# 4. the fast layer against the vLLM-kernel layer in one process (`granite_candidate_ab.py`).
# Predictions. On an H200: 1. c1 full call queued 0.40-0.43 ms (session 27's H200 c1 was 0.420 with code ~15 us
# slower; H200 and H100 queued times were within a few percent of each other), wall 0.43-0.47; x2 / x4 about linear
# in T and ~10-20 % below the H100's (the long-sequence front is DRAM-bound, 4.8 against 3.35 TB/s); 2. the official
# kernel sum 0.71-0.78 at c1 / c5 (the bar), ssmkit 1.6-1.9x on GPU time, 6-12x on wall, closer to float64 on
# all 16; 3. prefill 0.36-0.42 / 1.20-1.30 / 1.15-1.25 ms, decode 0.04-0.09 / 0.05-0.08 / 0.11-0.13; 4. ahead on
# all six workloads by 1.1-1.5x (session 33's H200: 1.16-1.53x). On an H100: as session 44's run 1.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s45r1; mkdir -p $W/official $W/mamba3_bench
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session45/run1/command.sh" > $W/command.txt
cat .anchors/vllm_ops/REVISION > $W/vllm_revision.txt
pack() { tar czf "$OUT/run1.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== mamba3 bench, scales 1,2,4 ($SECONDS s)"
timeout $(cap 170) python bench/mamba3_bench.py --out $W/mamba3_bench --commit "${SSMKIT_GIT_COMMIT:-unknown}" \
  --scales 1,2,4 > $W/mamba3_bench.log 2>&1
echo "rc=$?"; grep -E "^c[0-9]|targets|json:" $W/mamba3_bench.log | head -40; pack
echo "== mamba3 official anchor ($SECONDS s)"
if echo "$gpu" | grep -q H100; then
  tune="--pin bench/results/session35/run1/out/official/mamba3_official_ab.json"
else
  tune="--precompile 14"
fi
echo "official configs: $tune"
timeout $(cap 250) python bench/mamba3_official_ab.py --out $W/official \
  --cases c1_four_mixed,c5_three_even,c8_small_three $tune > $W/official/official_ab.log 2>&1
echo "rc=$?"; grep -v -i "warn\|autotuning\|best config" $W/official/official_ab.log | tail -30; pack
echo "== granite bench ($SECONDS s)"
timeout $(cap 110) python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py \
  --json $W/granite_bench.json --plot $W/granite_bench.png > $W/granite_bench.log 2>&1
echo "rc=$?"; tail -12 $W/granite_bench.log; pack
echo "== Granite: the fast layer against the vLLM-kernel layer, same process ($SECONDS s)"
timeout $(cap 200) python bench/granite_candidate_ab.py --a candidates/granite_fast.py \
  --b bench/granite_vllm_candidate.py --out $W/granite_candidate_ab.json > $W/granite_candidate_ab.log 2>&1
echo "rc=$?"; grep -v -i "warn\|Using default" $W/granite_candidate_ab.log | tail -12; pack
echo "== done ($SECONDS s)"
