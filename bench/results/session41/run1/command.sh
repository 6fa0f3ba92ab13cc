#!/usr/bin/env bash
# Session 41 run 1 (device, one call; carry ["bench/_ab"]): chunk slots that hold no chunk. The intra and side kernels
# ran their full work on masked zeros for such a slot (1-2 of 36-42 slots at c1-c7, 1 of 12 at c8: 2.6-8.3 % of
# their programs) so that its per-slot partials came out zero; now such a program writes only the partials the finish
# kernel sums over every slot (D, bias: zeros) and exits. Also the side kernel's q programs no longer load the state
# entering a sequence's first chunk (zero, spec §4): 4 MB less read at c1.
# Sides: ssmkit_s40 (d80df47, main before), ssmkit_s41i (ea02425: the intra change alone), the tree (both changes).
# 1. the Mamba-3 graph CUDA tests; 2. graph A/B of the three at the eight cases, twice (median queued time of 6
# alternating rounds each; the 16 results' bits compared); 3. per-kernel timelines at c1 / c5 / c8 (tree, d80df47).
# Prediction: the tree -1 to -6 us queued per call against d80df47 (c1-c3 -1 to -3, the two-empty-slot cases c4-c7
# -2 to -6; the sides' active programs +22 spill instructions offline, ~+0.3 us by session 40's calibration); the
# intra change alone -0.5 to -2 us; the side kernel -1 to -5 us in the timelines, intra -0.5 to -2; every result
# bit-identical on all three sides (the same operations on active slots; zero partials as before).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s41r1; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session41/run1/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run1.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
CASES=c1_four_mixed,c2_three_long,c3_five_mixed,c4_short_and_longest,c5_three_even,c6_two_short_two_long
CASES=$CASES,c7_one_off_chunk_edges,c8_small_three
P=bench/_ab/pkgs
echo "== CUDA tests ($SECONDS s)"
timeout $(cap 150) python -m pytest -q -x tests/mamba3/test_graph_cuda.py tests/mamba3/test_kernels_op.py 2>&1 | tail -3 \
  | tee $W/tests.txt; pack
for k in 1 2; do
  echo "== graph A/B $k ($SECONDS s)"
  timeout $(cap 200) python bench/mamba3_ab.py --package $P/ssmkit_s40 --package $P/ssmkit_s41i --cases $CASES \
    --out $W/ab$k 2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|rror|diff|bit" | cut -c1-400; pack
  python - "$W/ab$k/mamba3_ab.json" <<'PY' | tee $W/queued_rounds$k.txt
import json, sys
for row in json.load(open(sys.argv[1]))["rows"]:
    print(row["case"], "  ".join(f"{k}: {min(v) * 1e3:.0f}-{max(v) * 1e3:.0f}" for k, v in row["queued_ms_rounds"].items()))
PY
  pack
done
echo "== timelines ($SECONDS s)"
TL=c1_four_mixed,c5_three_even,c8_small_three
timeout $(cap 60) python bench/mamba3_timeline.py --cases $TL --out $W/tl_new 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "span" | cut -c1-200 | head -30; pack
PYTHONPATH=bench/_ab/s40src timeout $(cap 60) python bench/mamba3_timeline.py --cases $TL --out $W/tl_s40 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "span" | cut -c1-200 | head -30; pack
echo "== done ($SECONDS s)"
