#!/usr/bin/env bash
# Session 38 run 2 (device, one call; carry ["bench/_ab"], the package of 0bf461d made by
# `python bench/ab_package.py --commit 0bf461d --name ssmkit_s38main`).
# 1. The graph's dY gate moved from beside the forward's chunk-state kernel (second side stream) to right before the
#    state-gradient chain (first side stream, after the rotate kernel), beside the chunk scan (d0f7491). Why: run 1's
#    timeline at c1 has the gate (21.6 us) beside the chunk-state kernel on the critical path (43.3 us), while the
#    chain, which is the first to need dY, ends at 168 us and the scan beside it at 205: 37 us of slack. Same kernels,
#    same bits. Public entry through its graph against 0bf461d's, same process, every visible case.
#    Prediction: every result bit-identical; the chunk state 43 -> 38-41 us; queued -5 to +3 us per call (the gate
#    now shares SMs with the scan).
# 2. Timelines at c1: the change (concurrent streams), and main's code with every launch on one stream
#    (`--one-stream`: each kernel's duration with nothing beside it on an H100, which no run has measured; the
#    chunk scan's alone is known only from H200 runs, 47-51 us).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s38r2; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
pack() { tar czf "$OUT/run2.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== 1. graph A/B: the gate before the chain vs 0bf461d ($SECONDS s)"
timeout $(cap 150) python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s38main --out $W/ab_gate 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "^c[0-9]|^   |json|rror" | cut -c1-300; pack
echo "== 2. timelines ($SECONDS s)"
timeout $(cap 60) python bench/mamba3_timeline.py --out $W/timeline_gate --cases c1_four_mixed --calls 5 2>&1 \
  | grep -v "Warn\|warn(" | cut -c1-200; pack
timeout $(cap 60) python bench/mamba3_timeline.py --out $W/timeline_one_stream --cases c1_four_mixed,c5_three_even \
  --calls 5 --one-stream 2>&1 | grep -v "Warn\|warn(" | cut -c1-200; pack
echo "== done ($SECONDS s)"
