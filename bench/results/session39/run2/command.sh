#!/usr/bin/env bash
# Session 39 run 2 (device, one call): a register cap of 128 (or 96) on the forward's chunk-state kernel.
# Why: run 1's Nsight Compute counters (H100, c1 through the graph) show the kernel limited by registers to 3
# programs per SM (3.07 waves of 1216 programs, 17.8 % warps active). Offline (bench/sass_stats.py, sm_90, 4 warps):
# the graph's build, which reads its inputs at posted addresses (*_WORD >= 0), takes 140 registers; the direct build
# 127 (which is what session 23 measured when it left chunk_maxnreg at 0). Capped at 128: 127 registers, 0 spills,
# 2224 SASS instructions against 2216 (4 programs per SM); at 96: 68 spill instructions, 2312 (5 per SM).
# Predictions: same bits (a register cap changes no arithmetic); chunk state alone at c1 30.5 -> 24-28 us at 128; in the
# graph (beside the gate) 43 -> 36-41; queued per call -2 to -7 us at c1-c5. 96: between -5 and +5 us against 128.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s39r2; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
echo "bash bench/results/session39/run2/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run2.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
CASES=c1_four_mixed,c2_three_long,c4_short_and_longest,c5_three_even,c8_small_three
echo "== 1. graph A/B: fwd.chunk_maxnreg ($SECONDS s)"
timeout $(cap 220) python bench/mamba3_ab.py --cases $CASES --out $W/ab_cap \
  --configs '[{"fwd.chunk_maxnreg": 128}, {"fwd.chunk_maxnreg": 96}]' \
  2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|^   |json|rror" | cut -c1-300; pack
echo "== 2. timelines at c1 ($SECONDS s)"
for cfg in '{}' '{"fwd.chunk_maxnreg": 128}'; do
  for mode in "" "--one-stream"; do
    echo "-- $cfg $mode"
    timeout $(cap 60) python bench/mamba3_timeline.py --out $W/timeline_$(echo "$cfg" | tr -dc 'a-z0-9')${mode:+_one} \
      --cases c1_four_mixed --calls 5 --config "$cfg" $mode 2>&1 | grep -v "Warn\|warn(" | cut -c1-200; pack
  done
done
echo "== done ($SECONDS s)"
