#!/usr/bin/env bash
# Session 44 run 1 (device, one call; carry [".anchors"] made by `bash bench/anchor_setup.sh vllm` and
# `bash bench/anchor_setup.sh mamba3 <mirror of state-spaces/mamba>`): one snapshot of main's code on one card, for the
# README's status table (no code change since session 43's b30656e).
# 1. `granite bench` of the fast layer (6 workloads, 16 pairs, plot);
# 2. `bench/mamba3_bench.py` at scales 1, 2, 4 (issue 6's proof: fwd-only, bwd-only and full call, the profiler's
#    GPU kernel time, errors against float64; last run in session 36 at 9aa4e34);
# 3. `bench/mamba3_official_ab.py` at c1 / c5 / c8 (the official kernels beside the op in one process; last run in
#    session 35 at 32dca59), the official configs pinned to session 35's tuning on an H100 (no autotuning: it
#    takes minutes) or tuned afresh (--precompile 14) on any other card.
# Predictions (H100): 1. prefill 0.37-0.40 / 1.25-1.30 / 1.19-1.25 ms, decode 0.04-0.09 / 0.05-0.08 / 0.12-0.14 ms
# (decode moves with the host); 2. c1 full call queued ~0.445 ms, bwd-only and fwd-only in session 36's proportions
# (0.151 / 0.301 GPU at c1, direct), time growing about linearly with T at 2x / 4x; every case deterministic, worst
# error ratio to target <= 0.75; 3. ssmkit ~1.5x (c1) / 1.45x (c5) / 2.4x (c8) the official kernel sum (session 35:
# 0.695 / 0.644 / 0.409 ms), a little more now (the call is ~15 us faster than at 32dca59), 6-12x on wall; errors
# as session 35's.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s44r1; mkdir -p $W/official $W/mamba3_bench
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session44/run1/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run1.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== granite bench ($SECONDS s)"
timeout $(cap 110) python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py \
  --json $W/granite_bench.json --plot $W/granite_bench.png > $W/granite_bench.log 2>&1
echo "rc=$?"; tail -12 $W/granite_bench.log; pack
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
echo "rc=$?"; grep -v -i "warn\|autotuning\|best config" $W/official/official_ab.log | tail -40; pack
echo "== done ($SECONDS s)"
