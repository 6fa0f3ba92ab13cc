#!/usr/bin/env bash
# Session 36 run 8 (device, one call). Why the chunk scan takes 97.5 us beside the chain (runs 4-5): the chain kernel
# holds 218 registers x 128 threads (28.7 K of an SM's 65.5 K) in each of its 256 programs at c1, so most SMs hold
# two chain programs and have no room left for a scan program (168 x 128 = 21.5 K). Capped at 168 (new
# Mamba3BwdConfig.dstate_maxnreg; offline 356 spill instructions, loop bodies 687 / 917 SASS against 598 / 687) two
# chain programs leave room for one scan program; so do 8 warps at 80 (349 spill instructions). 8 warps uncapped (149
# registers: one chain program per SM, the other half of them waiting) as a bound. Through the graph against the
# defaults, the default given again as a control.
# Predictions: control within +-3 us; 168: -10 to +5 us at c1-c5 (the scan gets one slot per SM during the chain,
# the chain slows by its spills, 60 -> ~70 us); 160: like 168 or worse; 8 warps at 80: like 168 +-5; 8 warps
# uncapped: +20 or more (the chain in two waves).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s36r8; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
pack() { tar czf "$OUT/run8.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== the chain's register cap through the graph ($SECONDS s)"
timeout $(cap 300) python bench/mamba3_ab.py --configs '[{"dstate_maxnreg": 0}, {"dstate_maxnreg": 168},
  {"dstate_maxnreg": 160}, {"dstate_warps": 8, "dstate_maxnreg": 80}, {"dstate_warps": 8}]' \
  --cases c1_four_mixed,c4_short_and_longest,c5_three_even,c8_small_three \
  --out $W/ab_chain_cap 2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|rror" | cut -c1-460; pack
echo "== done ($SECONDS s)"
