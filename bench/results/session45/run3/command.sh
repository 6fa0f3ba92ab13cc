#!/usr/bin/env bash
# Session 45 run 3 (device, one call): where the bench's wall time of the Mamba-3 public call exceeds its queued time
# at long sequences (run 1, H100: wall - queued 0.03-0.19 ms at x1 / x2, 0.27-0.37 at every x4 case; a fresh process
# 0.04-0.05 at every scale, session 44 run 4). `bench/mamba3_wall_gap.py` (new) in one process, c1 at x1 / x2
# / x4, three phases in order: fresh (the entry alone), bench_state (the bench's stages built and timed, their tensors
# live), after_profiler (one torch.profiler window of the full call first).
# Prediction: fresh 0.03-0.05 at every scale (as session 44's run 4); bench_state reproduces the bench's gap at x4
# (0.2-0.35 ms), in span (the GPU from an idle start), the allocator making no cudaMalloc / cudaFree in the split;
# after_profiler as fresh. (If the gap is in after_profiler alone, the profiler's state in the bench process is the
# cause, not the held tensors.)
# On an H200 (none came in sessions 28-45 so far), first the issue-6 snapshot on the issue's card: `mamba3_bench.py`
# at scale 1 and the official kernels beside the op (tuned afresh, --precompile 14). Prediction there: c1 queued
# 0.40-0.43 ms, wall 0.43-0.47; official kernel sum 0.71-0.78 (the bar), ssmkit 1.6-1.9x on it.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s45r3; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session45/run3/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run3.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
if nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -q H200; then
  mkdir -p $W/mamba3_bench $W/official
  echo "== H200: mamba3 bench, scale 1 ($SECONDS s)"
  timeout $(cap 100) python bench/mamba3_bench.py --out $W/mamba3_bench --commit "${SSMKIT_GIT_COMMIT:-unknown}" \
    --scales 1 > $W/mamba3_bench.log 2>&1; echo "rc=$?"; grep -E "^c[0-9]" $W/mamba3_bench.log; pack
  echo "== H200: official kernels, c1 / c5 / c8 ($SECONDS s)"
  timeout $(cap 200) python bench/mamba3_official_ab.py --out $W/official --precompile 14 \
    --cases c1_four_mixed,c5_three_even,c8_small_three > $W/official/official_ab.log 2>&1
  echo "rc=$?"; grep -E "^\[|wall_ms|differ|identical|speedup" $W/official/official_ab.log; pack
fi
echo "== mamba3_wall_gap.py ($SECONDS s)"
timeout $(cap 300) python bench/mamba3_wall_gap.py --out $W --cases c1_four_mixed --scales 1,2,4 \
  > $W/wall_gap.log 2>&1; echo "rc=$?"; grep -v -i "warn" $W/wall_gap.log | tail -24; pack
echo "== done ($SECONDS s)"
