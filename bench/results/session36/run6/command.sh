#!/usr/bin/env bash
# Session 36 run 6 (device, one call). With the passing now dispatched first (run 5: the pair 61 us at c1 instead of
# 65, the rotate kernel stretched to 61 us beside it: ~2.3 TB/s for the pair's ~143 MB, below the copy rate), the
# launch configs that decide how the two share an SM, through the graph against the defaults (rotate 8 warps capped
# at 128 registers: one program beside the passing's ~29 K registers per SM; passing 16 rows x 4 warps, 512
# programs at c1), with the default given again as a control: the rotate kernel at 4 warps (16 K registers a
# program: two beside the passing), the passing at 32 rows (256 programs) or at 2 warps.
# Predictions: control within +-3 us; rotate at 4 warps -3 to -10 us at c1-c5 (session 35 measured it +9 / +10 with
# the rotate dispatched first); passing 32 rows: +-5 (fewer, longer programs on its serial path); 2 warps: +-3.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s36r6; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
pack() { tar czf "$OUT/run6.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== launch configs of the rotate / passing pair ($SECONDS s)"
timeout $(cap 240) python bench/mamba3_ab.py --configs '[{"fwd.rotate_warps": 8}, {"fwd.rotate_warps": 4},
  {"fwd.passing_block_p": 32}, {"fwd.passing_warps": 2}]' --cases c1_four_mixed,c4_short_and_longest,c5_three_even,c8_small_three \
  --out $W/ab_pair 2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|rror" | cut -c1-400; pack
echo "== done ($SECONDS s)"
