#!/usr/bin/env bash
# Session 39 run 9 (device, one call): launch options last measured before the graph (most on an H200, one round per
# side), again through the graph with the queued time as the median of 6 alternating rounds (run 6's method).
# dstate_warps 8 (the chain; H200 3665772: level at c1, slower at c3), finish_warps 8, reduce_tokens 8 (session 22:
# 16 replaced 8, -6 to -10 us, direct launches), passing_warps 8 and passing_block_p 32 (the passing beside the rotate
# kernel). Predictions: each within +-3 us of main at every case, or slower; bits as main's except where a sum's
# split changes (reduce_tokens: same order per element, so the same bits expected).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s39r9; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
echo "bash bench/results/session39/run9/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run9.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
CASES=c1_four_mixed,c2_three_long,c3_five_mixed,c4_short_and_longest,c5_three_even,c6_two_short_two_long
CASES=$CASES,c7_one_off_chunk_edges,c8_small_three
echo "== graph A/B ($SECONDS s)"
timeout $(cap 200) python bench/mamba3_ab.py --cases $CASES --out $W/ab --configs \
  '[{"dstate_warps": 8}, {"finish_warps": 8}, {"reduce_tokens": 8}, {"fwd.passing_warps": 8}, {"fwd.passing_block_p": 32}]' \
  2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|rror" | cut -c1-400; pack
python - "$W/ab/mamba3_ab.json" <<'PY' | tee $W/queued_rounds.txt
import json, sys
for row in json.load(open(sys.argv[1]))["rows"]:
    print(row["case"], "  ".join(f"{k}: {min(v) * 1e3:.0f}-{max(v) * 1e3:.0f}" for k, v in row["queued_ms_rounds"].items()))
PY
pack
echo "== done ($SECONDS s)"
