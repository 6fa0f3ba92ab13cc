#!/usr/bin/env bash
# Session 44 run 7 (device, one call), after the review of the session's change:
# 1. the graph CUDA tests: the one-stream forward again lets the state passing store the carry (no carry launch, as
#    before this session), the side-stream forward runs the angle-carry kernel; the side-stream test now compares the
#    two carries' results bit for bit (also at 5120 + 700 tokens);
# 2. `bench/mamba3_graph_memory.py` corrected: a graph's retained memory as the device memory kept reserved with it
#    alive (after emptying the cache), which holds its private pool; run 2 took memory_allocated, which leaves the pool
#    out (109 MiB at c1 then).
# Predictions (H100): 1. pass (5 of 5); 2. ~3x run 2's figures: ~300-400 MiB at c1 (T = 2184), ~2.5-3 GB at x8
#    (T = 17472), about the direct call's peak (282 MiB at c1 in run 2).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s44r7; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session44/run7/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run7.tgz" -C $W .; }
echo "== graph CUDA tests ($SECONDS s)"
timeout 150 python -m pytest -q tests/mamba3/test_graph_cuda.py > $W/tests.txt 2>&1; echo "rc=$?"; tail -2 $W/tests.txt
pack
echo "== graph memory ($SECONDS s)"
timeout 200 python bench/mamba3_graph_memory.py --out $W/graph_memory.json \
  --cases c1_four_mixed,c8_small_three --scales 1,2,4,8 > $W/graph_memory.log 2>&1
echo "rc=$?"; tail -10 $W/graph_memory.log; pack
echo "== done ($SECONDS s)"
