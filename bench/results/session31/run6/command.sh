#!/usr/bin/env bash
# Session 31 run 6 (device, one short call): the review mend of the entry's fast path (the device compared, not its
# index; kernels_apply and graph_applies decide as the entry does; a settings helper). Steps: the Mamba-3 graph CUDA
# tests (the default path's replays go through the fast path: 8 of 8), then the wall split.
# Predictions: pass; span - queued as run 4's (34-38 us at c1 / c5 / c8) within this host's noise, the layout check
# +1-2 us (one torch.device per argument).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s31r6; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
pack() { tar czf "$OUT/run6.tgz" -C $W .; }
echo "== CUDA graph tests ($SECONDS s)"
timeout 70 python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py > $W/pytest_graph_cuda.log 2>&1
echo "rc=$?"; grep -E "passed|failed|FAILED" $W/pytest_graph_cuda.log | tail -3; pack
echo "== wall split ($SECONDS s)"
timeout 70 python bench/mamba3_wall_split.py --out $W/split 2>&1 | grep -v "Warn\|warn(" | tail -7; pack
echo "== done ($SECONDS s)"
