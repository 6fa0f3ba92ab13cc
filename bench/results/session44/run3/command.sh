#!/usr/bin/env bash
# Session 44 run 3 (device, one call): main with the Mamba-3 graph bound at 20480 tokens (3eacd7d).
# 1. the graph CUDA tests; 2. `bench/mamba3_bench.py` at scales 1, 2, 4 (issue 6's proof table, now with the full
#    call's queued GPU time beside the profiler's kernel sum).
# Predictions (H100): 1. pass; 2. the full call's wall at x2 0.86-0.95 ms (run 1, direct there: 1.455 at c1 x2), at
#    x4 1.65-1.90 (run 1: 2.144); x1 as run 1 (0.50 at c1, queued ~0.445); the same errors and determinism as run 1.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s44r3; mkdir -p $W/mamba3_bench
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session44/run3/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run3.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== graph CUDA tests ($SECONDS s)"
timeout $(cap 150) python -m pytest -q tests/mamba3/test_graph_cuda.py > $W/tests.txt 2>&1; echo "rc=$?"; tail -2 $W/tests.txt
pack
echo "== mamba3 bench, scales 1,2,4 ($SECONDS s)"
timeout $(cap 300) python bench/mamba3_bench.py --out $W/mamba3_bench --commit "${SSMKIT_GIT_COMMIT:-unknown}" \
  --scales 1,2,4 > $W/mamba3_bench.log 2>&1
echo "rc=$?"; grep -v "^c[0-9]" $W/mamba3_bench.log | grep -E "^case|targets|stage|json:"; grep -E "^c[0-9].*(ms|  [a-z]+ 0\.)" $W/mamba3_bench.log | tail -24 | cut -c1-22,85-; pack
echo "== done ($SECONDS s)"
