#!/usr/bin/env bash
# Session 40 run 2 (device, one call; carry ["bench/_ab"]): Phi's cos / sin formed by the side kernel from the
# forward's angle cumsum and carry (the rotate kernel no longer stores cos / sin: 17.9 MB less written at c1), against
# main before it (f026436: bench/_ab/pkgs/ssmkit_s39 as a renamed package, bench/_ab/s39src as the plain source).
# 1. the Mamba-3 graph CUDA tests; 2. graph A/B of the two packages at the eight cases (median queued time of
# 6 alternating rounds; the 16 results' bits compared); 3. per-kernel timelines at c1 / c5 of both (rotate, passing,
# sides durations); 4. if time is left, session 39's run 10 (v27 / v28 / v30 against this tree).
# Prediction: queued -2 to -8 us per call at c1-c7 (rotate / passing pair -5 to -8 us, being bound by its bytes;
# sides +0 to +3 us, +880 SASS instructions offline in its two rotated-half branches, same registers and spills);
# every result bit-identical (the same sincos on the same Phi; a different FMA contraction would show as 1-ulp moves
# in dq / dk / dangles).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s40r2; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session40/run2/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run2.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
CASES=c1_four_mixed,c2_three_long,c3_five_mixed,c4_short_and_longest,c5_three_even,c6_two_short_two_long
CASES=$CASES,c7_one_off_chunk_edges,c8_small_three
echo "== CUDA tests ($SECONDS s)"
timeout $(cap 120) python -m pytest -q -x tests/mamba3/test_graph_cuda.py 2>&1 | tail -3 | tee $W/tests.txt; pack
echo "== graph A/B against f026436 ($SECONDS s)"
timeout $(cap 200) python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s39 --cases $CASES --out $W/ab 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|rror|diff|bit" | cut -c1-400; pack
python - "$W/ab/mamba3_ab.json" <<'PY' | tee $W/queued_rounds.txt
import json, sys
for row in json.load(open(sys.argv[1]))["rows"]:
    print(row["case"], "  ".join(f"{k}: {min(v) * 1e3:.0f}-{max(v) * 1e3:.0f}" for k, v in row["queued_ms_rounds"].items()))
PY
pack
echo "== timelines ($SECONDS s)"
timeout $(cap 60) python bench/mamba3_timeline.py --cases c1_four_mixed,c5_three_even --out $W/tl_new 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "med|rotate|passing|sides|span" | cut -c1-200 | head -30; pack
PYTHONPATH=bench/_ab/s39src timeout $(cap 60) python bench/mamba3_timeline.py --cases c1_four_mixed,c5_three_even \
  --out $W/tl_s39 2>&1 | grep -v "Warn\|warn(" | grep -E "med|rotate|passing|sides|span" | cut -c1-200 | head -30; pack
if [ $((${BUDGET:-585} - SECONDS)) -gt 200 ]; then
  echo "== session 39 run 10 ($SECONDS s)"
  P=bench/_ab/pkgs
  timeout $(cap 300) python bench/mamba3_ab.py --package $P/ssmkit_v27 --package $P/ssmkit_v28 --package $P/ssmkit_v30 \
    --out $W/run10_ab 2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|rror" | cut -c1-400; pack
fi
echo "== done ($SECONDS s)"
