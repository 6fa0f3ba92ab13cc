#!/usr/bin/env bash
# Session 36 run 9 (device, one call). Run 8: capping the chain's registers (so that a scan program fits beside two
# chain programs) slowed the chain by its spills (59 -> 100 us at 168) more than it gave the scan. Another way to
# shrink the chain's footprint beside the scan: one program per head and sequence for both state halves
# (Mamba3BwdConfig.dstate_both, new; 128 programs at c1, at most one per SM), dY loaded once per chunk for both
# halves' dots; the same bits. Offline sm_90: 8 warps uncapped 231 registers (59 K a program: no scan program
# beside it), at 128 (32.8 K: one scan program beside it) 221 spill instructions, loop body 934 SASS; at 88 (22.5 K:
# two scan programs beside it) 364, 1039; 4 warps 255 registers, 235 spill instructions. Through the graph against the
# defaults (two programs per head and sequence at 4 warps, 218 registers: 28.7 K each, two per SM), the default
# given again as a control.
# Predictions: control within +-3 us; 8 warps at 128: -5 to -15 us at c1-c5 (the scan one program per SM during the
# chain instead of ~none, the chain's steps as long as now); at 88: -10 to +10; uncapped: +0 to +15; 4 warps: +5 to
# +30 (spills in the loop).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s36r9; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
pack() { tar czf "$OUT/run9.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== the chain on both halves per program, through the graph ($SECONDS s)"
timeout $(cap 300) python bench/mamba3_ab.py --configs '[{"dstate_both": false},
  {"dstate_both": true, "dstate_warps": 8, "dstate_maxnreg": 128}, {"dstate_both": true, "dstate_warps": 8, "dstate_maxnreg": 88},
  {"dstate_both": true, "dstate_warps": 8}, {"dstate_both": true}]' \
  --cases c1_four_mixed,c4_short_and_longest,c5_three_even,c8_small_three \
  --out $W/ab_chain_both 2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|rror" | cut -c1-560; pack
echo "== done ($SECONDS s)"
