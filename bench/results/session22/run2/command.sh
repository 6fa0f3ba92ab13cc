#!/usr/bin/env bash
# Session 22 run 2 (device, one call): how stable `granite bench` is at 4 A/B/B/A pairs (the default until now) and
# at 16 (the new CUDA default, CUDA_PAIRS): two runs of each, alternating, same process kind, same code. Then a
# Mamba-3 forward config sweep of single fields last compared before sessions 15-17 cut the kernels' registers.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
for run in a b; do
  for reps in 4 16; do
    echo "== granite bench, $reps pairs, run $run ($SECONDS s)"
    timeout 150 python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py --reps $reps \
      --json "$OUT/granite_bench_p${reps}_$run.json" > "$OUT/granite_bench_p${reps}_$run.log" 2>&1; echo "rc=$?"
    grep -E "^(prefill|decode)|geomean" "$OUT/granite_bench_p${reps}_$run.log"
  done
done
echo "== mamba3 fwd config sweep ($SECONDS s)"
timeout 150 python bench/mamba3_config_sweep.py --fwd --out $OUT/sweep --cases c1_four_mixed,c4_short_and_longest \
  --configs '[{"chunk_warps": 4}, {"rotate_warps": 4, "rotate_maxnreg": 0}, {"passing_block_p": 32}, {"passing_block_p": 8, "passing_warps": 2}]' \
  2>&1 | grep -v "Warn\|warn(" | tail -12
tar czf "$OUT/logs.tgz" -C "$OUT" $(cd "$OUT" && ls *.log) && rm -f "$OUT"/*.log
echo "== done ($SECONDS s)"
