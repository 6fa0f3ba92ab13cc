#!/usr/bin/env bash
# Session 35 run 6 (device, one call): run 5's lead checked before a default changes. The rotate kernel uncapped
# (fwd.rotate_maxnreg 0) against the default cap of 128, at every visible case, through the graph, same process,
# with a control: the default config given again as a third side (its difference from the baseline is this call's
# noise). Run 5: uncapped -5 / -5 / -10 us queued at c1 / c5 / c8, same bits.
# Prediction: uncapped -3 to -8 us queued at c1-c7 beyond the control's difference (within +-3 us of 0), same bits.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s35r6; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
pack() { tar czf "$OUT/run6.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== rotate kernel uncapped against its cap, every visible case ($SECONDS s)"
timeout $(cap 400) python bench/mamba3_ab.py --configs '[{"fwd.rotate_maxnreg": 0}, {"fwd.rotate_maxnreg": 128}]' \
  --out $W/ab_rotate_cap 2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json" | cut -c1-320; pack
echo "== done ($SECONDS s)"
