#!/usr/bin/env bash
# Session 36 run 1 (device, one call). The side kernel over groups of heads (Mamba3BwdConfig.side_head_group, 7b9ecd8:
# each program sums g heads' dq_hat / dk_hat rows in fp32 and stores one row per group, so the (T, H/g, N) bf16
# partials shrink from 36 MB to 18 / 9 MB at c1, written by the sides and read back by the finish kernel; programs
# g times longer, g times fewer; offline sm_90 at the 168 cap: 66 -> 478 (g 2) / 623 (g 4) spill instructions,
# uncapped g 2 at 255 registers with 55). Through the graph against the defaults (g 1), with g 1 given again as a
# control; the kernels' split at the first case.
# Predictions: control within +-3 us; g 2 at 168: finish -3 to -5 us, sides -5 to +10 (the spills), so the call -8
# to +8; g 4 worse than g 2 (longer programs, more spills, 296 programs a plane at c1); uncapped (two programs per
# SM) worse than capped at both g, as at g 1 (session 20: +9 us).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s36r1; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
pack() { tar czf "$OUT/run1.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== 1. side head groups ($SECONDS s)"
timeout $(cap 420) python bench/mamba3_ab.py --configs '[{"side_head_group": 1}, {"side_head_group": 2},
  {"side_head_group": 4}, {"side_head_group": 2, "side_maxnreg": 0}, {"side_head_group": 2, "side_maxnreg": 232},
  {"side_head_group": 4, "side_maxnreg": 0}]' --cases c1_four_mixed,c4_short_and_longest,c5_three_even,c8_small_three \
  --out $W/ab_groups 2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|rror" | cut -c1-400; pack
echo "== done ($SECONDS s)"
