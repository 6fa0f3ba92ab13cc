#!/usr/bin/env bash
# Session 46 run 2 (device, one call): the Mamba-3 judge of main's code on the card that comes, and on an H100 the
# bench's wall gap that session 45 left open.
# 1. `mamba3 judge` of experiments v35 (main's Mamba-3 code as one file: `ssmkit export mamba3` at this commit
#    differs from it in comments only) in its isolated worker; judged so far on H100s only (session 44: G = 33.61).
# 2. On an H100 only: `bench/mamba3_wall_gap.py` (c1 at 1x / 2x / 4x; phases fresh, bench_state, after_profiler).
#    Session 45 ran it on an H200 (wall - queued at 4x 0.04 / 0.06 / 0.09 ms); the ~0.3 ms gap at every 4x row was
#    only ever seen in the H100's bench (session 45 run 1).
# Predictions: 1 PASS with every check ok; G 30-45 (it moves with the eager reference's time on the host). 2 fresh
# 0.03-0.05 ms at every scale; bench_state and after_profiler below 0.1 ms at 4x, as on the H200 (then the gap is
# the bench's longer history: its 24 cases' graphs and pools), or 0.2-0.35 in one of them (then that phase's cause).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s46r2; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session46/run2/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run2.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== mamba3 judge v35 ($SECONDS s)"
timeout $(cap 300) python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v35/solver.py \
  --json $W/judge_v35.json > $W/judge_v35.log 2>&1; echo "rc=$?"; tail -14 $W/judge_v35.log; pack
if nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -q H100; then
  echo "== H100: mamba3_wall_gap.py ($SECONDS s)"
  timeout $(cap 260) python bench/mamba3_wall_gap.py --out $W --cases c1_four_mixed --scales 1,2,4 \
    > $W/wall_gap.log 2>&1; echo "rc=$?"; grep -v -i "warn" $W/wall_gap.log | tail -24; pack
fi
echo "== done ($SECONDS s)"
