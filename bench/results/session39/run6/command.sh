#!/usr/bin/env bash
# Session 39 run 6 (device, one call): runs 2, 4 and 5's two forward launch options again, with the A/B's queued time
# now the median of 6 rounds in alternating side order (bench/mamba3_ab.py interleaved_queued_ms).
# Why: run 4 measured passing_block_p 8 at -3 to -6 us queued (old defaults first), run 5 the new defaults level or
# +4 us against the old (new defaults first): one 20-call round per side in a fixed order. main is back at session
# 38's defaults (passing_block_p 16, chunk_maxnreg 0), the baseline here.
# Predictions: each option within +-3 us of the baseline at every case (the c1 timeline of run 5: the passing's
# 1024 programs take the SMs first and the rotate kernel ends at 108.7 us as before); the rounds' spread per side
# 2-6 us; every result bit-identical.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s39r6; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
echo "bash bench/results/session39/run6/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run6.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
CASES=c1_four_mixed,c2_three_long,c3_five_mixed,c4_short_and_longest,c5_three_even,c6_two_short_two_long
CASES=$CASES,c7_one_off_chunk_edges,c8_small_three
echo "== graph A/B ($SECONDS s)"
timeout $(cap 300) python bench/mamba3_ab.py --cases $CASES --out $W/ab --configs \
  '[{"fwd.chunk_maxnreg": 128}, {"fwd.passing_block_p": 8}, {"fwd.chunk_maxnreg": 128, "fwd.passing_block_p": 8}]' \
  2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|rror" | cut -c1-300; pack
python - "$W/ab/mamba3_ab.json" <<'PY' | tee $W/queued_rounds.txt
import json, sys
for row in json.load(open(sys.argv[1]))["rows"]:
    print(row["case"], "  ".join(f"{k}: {min(v) * 1e3:.0f}-{max(v) * 1e3:.0f}" for k, v in row["queued_ms_rounds"].items()))
PY
pack
if grep -q H200 $W/gpu.txt; then  # the issues' targets were set on an H200; no figure of main's current code on one
  # (sessions 28-39 ran on H100s). Prediction: queued 0.36-0.42 ms at c1-c7.
  echo "== H200: graph queued time of main's public entry ($SECONDS s)"
  timeout $(cap 150) python bench/mamba3_ab.py --graph --scales 1 --out $W/ab_graph 2>&1 | grep -v "Warn\|warn(" \
    | grep -E "^c[0-9]|json|rror" | cut -c1-300; pack
fi
echo "== done ($SECONDS s)"
