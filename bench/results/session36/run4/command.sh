#!/usr/bin/env bash
# Session 36 run 4 (device, one call): where one full-VJP call's GPU time goes on its three streams (new
# `bench/mamba3_timeline.py`: each kernel's start / end in one graph replay on an idle GPU, and the stretches where no
# kernel runs), c1 / c5 / c8, 7 calls each. The kernel sums (runs 1-2) double-count what overlaps; this says which
# kernels the call waits for.
# Predictions: span ~0.44-0.47 ms at c1 (the queued time plus the idle GPU's start); the critical path chunk state ->
# rotate -> scan -> intra -> sides -> carry -> finish, with the state-gradient chain ending before the scan does (so
# the intra kernel does not wait for it); idle gaps only between dependent launches, a few us in all (graph launch
# latency per node ~1-2 us on the critical path, ~8 nodes).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s36r4; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
pack() { tar czf "$OUT/run4.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== timeline ($SECONDS s)"
timeout $(cap 240) python bench/mamba3_timeline.py --out $W/timeline 2>&1 | grep -v "Warn\|warn(" | cut -c1-200; pack
echo "== done ($SECONDS s)"
