#!/usr/bin/env bash
# Session 36 run 2 (device, one call). 1. Register caps that change the programs per SM, through the graph against
# the defaults, with the default given again as a control: the intra kernel at 128 (four 4-warp programs per SM
# instead of three; offline sm_90 53 spill instructions against none at 168; never measured at 4 warps), the side
# kernel at 128 (four per SM; 339 spill instructions against 65) and at 144 (still three; 209). 2. `mamba3_bench.py`
# at the visible panels, 1x and 2x lengths, now also timing the full-VJP call's own split (fwd_vjp: the forward
# given dout writes dz, y not stored; bwd_vjp: the backward into the same gradients) beside the autograd form's.
# Predictions: 1. control within +-3 us; intra 128: the call -5 to +5 us (2.24 waves instead of 2.99 at c1, each
# program slower by its spills); side 128: +10 to +30 (session 15 measured +29 us at the then leaner kernel); side
# 144: +2 to +8 (same occupancy, more spills). 2. fwd_vjp below fwd (no y: -13 MB written) by 0-5 us, bwd_vjp below
# bwd by the dz gate's 15-25 us; full-call figures as run 1's.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s36r2; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
pack() { tar czf "$OUT/run2.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== 1. register caps ($SECONDS s)"
timeout $(cap 200) python bench/mamba3_ab.py --configs '[{"intra_maxnreg": 168}, {"intra_maxnreg": 128},
  {"side_maxnreg": 128}, {"side_maxnreg": 144}]' --cases c1_four_mixed,c4_short_and_longest,c5_three_even,c8_small_three \
  --out $W/ab_caps 2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|rror" | cut -c1-400; pack
echo "== 2. bench, 1x 2x ($SECONDS s)"
timeout $(cap 400) python bench/mamba3_bench.py --scales 1,2 --out $W/bench --commit "${SSMKIT_GIT_COMMIT:-unknown}" \
  2>&1 | grep -v "Warn\|warn(" | tail -30 | cut -c1-260; pack
echo "== done ($SECONDS s)"
