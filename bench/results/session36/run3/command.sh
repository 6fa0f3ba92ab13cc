#!/usr/bin/env bash
# Session 36 run 3 (device, one call): run 2's step 2 again after its fix (the bench's local `bwd` function had
# shadowed the kernel module: allocate_grads now imported by name). `mamba3_bench.py` at the visible panels, 1x and
# 2x lengths, timing the full-VJP call's own split (fwd_vjp / bwd_vjp) beside the autograd form's (fwd / bwd).
# Predictions: fwd_vjp below fwd by 0-5 us (no y stored), bwd_vjp below bwd by the dz gate's 15-25 us; the full call
# as run 1 / run 2 measured it through the graph (c1 ~0.46 ms queued; this bench's GPU sum counts overlapping
# kernels twice).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s36r3; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
pack() { tar czf "$OUT/run3.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== bench, 1x 2x ($SECONDS s)"
timeout $(cap 540) python bench/mamba3_bench.py --scales 1,2 --out $W/bench --commit "${SSMKIT_GIT_COMMIT:-unknown}" \
  2>&1 | grep -v "Warn\|warn(" | tail -30 | cut -c1-300; pack
echo "== done ($SECONDS s)"
