#!/usr/bin/env bash
# Session 44 run 6 (device, one call): main's Mamba-3 code at the end of the session (the graph up to 20480 tokens,
# the forward's angle-carry kernel).
# 1. `mamba3 judge` of experiments v34 (this code as one file) in its isolated worker;
# 2. `mamba3 selfcheck` of the tree;
# 3. `bench/mamba3_bench.py` at scales 1, 2, 4 (issue 6's proof table at the final commit).
# Predictions (H100): 1-2 PASS, every check ok (the bits are v33's at the visible panels: run 5); 3. as run 3 within a
# few us (queued c1 ~0.44 ms; x2 0.80-0.91, x4 1.59-1.80 queued), errors and determinism as run 3.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s44r6; mkdir -p $W/mamba3_bench
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session44/run6/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run6.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== judge v34 ($SECONDS s)"
timeout $(cap 260) python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v34/solver.py \
  --json $W/judge_v34.json > $W/judge_v34.log 2>&1; echo "rc=$?"; tail -12 $W/judge_v34.log; pack
echo "== selfcheck ($SECONDS s)"
timeout $(cap 120) python -m ssmkit.cli mamba3 selfcheck --json $W/selfcheck.json > $W/selfcheck.log 2>&1
echo "rc=$?"; tail -6 $W/selfcheck.log; pack
echo "== mamba3 bench, scales 1,2,4 ($SECONDS s)"
timeout $(cap 200) python bench/mamba3_bench.py --out $W/mamba3_bench --commit "${SSMKIT_GIT_COMMIT:-unknown}" \
  --scales 1,2,4 > $W/mamba3_bench.log 2>&1
echo "rc=$?"; grep -E "^c[0-9]" $W/mamba3_bench.log | tail -24 | cut -c1-22,85-; pack
echo "== done ($SECONDS s)"
