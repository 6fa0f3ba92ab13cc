#!/usr/bin/env bash
# Session 35 run 3 (device, one call, carry ["bench/_ab"]: pkgs/ssmkit_s35base = 32dca59, made by
# `python bench/ab_package.py --commit 32dca59 --name ssmkit_s35base`). The Mamba-3 full-VJP call with the gate's dz
# written by the forward's chunk scan (`mamba3_siso_fwd(gate_grad=...)`: no y saved, no dz gate kernel on the side
# stream) against session 34's main. Steps, most important first: 1. the public entry through its graph, A/B against
# 32dca59, every visible case; 2. the graph CUDA tests; 3. the wall split at c1 / c5 / c8.
# Predictions: 1. all 16 results bit-identical (dz: the gate kernel's expression on the same y); queued -5 to -15 us
# per call at c1-c7 (the side stream's gate kernel read dout, z and y (54 MB) and wrote dz (13 MB) at T = 2184: ~20
# us of HBM traffic beside the chunk kernels, gone; the chunk scan reads dout and writes dz instead of writing y:
# level bytes), c8 -2 to -5; wall alike; 2. pass; 3. c1 queued ~0.45 ms on an H100.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s35r3; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
pack() { tar czf "$OUT/run3.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== 1. A/B public entry, graph, against 32dca59 ($SECONDS s)"
timeout $(cap 260) python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s35base --out $W/ab_graph \
  2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json" | cut -c1-260; pack
echo "== 2. graph CUDA tests ($SECONDS s)"
timeout $(cap 150) python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py > $W/pytest_cuda.log 2>&1
echo "rc=$?"; tail -1 $W/pytest_cuda.log; grep -E "FAILED|Error" $W/pytest_cuda.log | head -8; pack
echo "== 3. wall split ($SECONDS s)"
timeout $(cap 120) python bench/mamba3_wall_split.py --out $W/split 2>&1 | grep -v "Warn\|warn(" | tail -8; pack
echo "== done ($SECONDS s)"
