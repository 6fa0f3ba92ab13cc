#!/usr/bin/env bash
# Session 41 run 1 (device, one call; carry ["bench/_ab"]). Two changes, each against the code before it:
# A. Chunk slots that hold no chunk (c315628). The intra and side kernels ran their full work on masked zeros for
#    such a slot (1-2 of 36-42 slots at c1-c7, 1 of 12 at c8: 2.6-8.3 % of their programs) so that its per-slot
#    partials came out zero; now such a program writes only the partials the finish kernel sums over every slot (D,
#    bias: zeros) and exits. Also the side kernel's q programs no longer load the state entering a sequence's first
#    chunk (zero, spec §4): 4 MB less read at c1.
# B. Programmatic dependent launch (the tree; its commit in tree_commit.txt beside this file): the finish kernel
#    after the dPhi carry kernel (its GQA-reduce programs run beside the carry kernel, its angle programs wait), and
#    the side kernel after the intra kernel (each program loads dY, the states and their gradients, Q~, K~ and V and
#    runs its first dot before it waits for the intra kernel's results).
# Sides: ssmkit_s40 (d80df47, main before), ssmkit_s41i (ea02425: A's intra change alone), ssmkit_s41e (c315628: A),
# the tree (A + B). 1. the Mamba-3 graph and op CUDA tests (a new one: B keeps the bits over back-to-back replays);
# 2. graph A/B of the four at the eight cases, twice (median queued time of 6 alternating rounds each; the 16
# results' bits compared); 3. the tree with finish_pdl, side_pdl or both False against its default (graph A/B,
# eight cases); 4. per-kernel timelines at c1 / c5 / c8 (tree, d80df47, the tree with both False).
# Prediction A: s41e -1 to -6 us queued per call against s40 (c1-c3 -1 to -3, the two-empty-slot cases c4-c7 -2 to
# -6; the sides' active programs +12 spill instructions offline, ~+0.2 us by session 40's calibration); s41i -0.5 to
# -2; in the timelines the side kernel -1 to -5 us, intra -0.5 to -2; every result bit-identical on all sides.
# Prediction B: finish_pdl -1 to -4 us per call (the carry kernel's 2.4 us and two ~0.4 us gaps come off the
# finish's start, if its GQA-reduce programs are its longest); side_pdl -1 to -4 us (the side kernel's first wave
# loads and runs its first dot in the intra kernel's tail); the same bits; both False gives the s41e times.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s41r1; mkdir -p $W
HERE=bench/results/session41/run1
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "tree $(cat $HERE/tree_commit.txt 2>/dev/null || echo unknown) (passed: ${SSMKIT_GIT_COMMIT:-unknown})" | tee $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash $HERE/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run1.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
CASES=c1_four_mixed,c2_three_long,c3_five_mixed,c4_short_and_longest,c5_three_even,c6_two_short_two_long
CASES=$CASES,c7_one_off_chunk_edges,c8_small_three
P=bench/_ab/pkgs
rounds() {
  python - "$1" <<'PY'
import json, sys
for row in json.load(open(sys.argv[1]))["rows"]:
    print(row["case"], "  ".join(f"{k}: {min(v) * 1e3:.0f}-{max(v) * 1e3:.0f}" for k, v in row["queued_ms_rounds"].items()))
PY
}
echo "== CUDA tests ($SECONDS s)"
timeout $(cap 150) python -m pytest -q -x tests/mamba3/test_graph_cuda.py tests/mamba3/test_kernels_op.py 2>&1 | tail -3 \
  | tee $W/tests.txt; pack
for k in 1 2; do
  echo "== graph A/B $k ($SECONDS s)"
  timeout $(cap 200) python bench/mamba3_ab.py --package $P/ssmkit_s40 --package $P/ssmkit_s41i --package $P/ssmkit_s41e \
    --cases $CASES --out $W/ab$k 2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|rror|diff|bit" | cut -c1-400
  rounds "$W/ab$k/mamba3_ab.json" | tee $W/queued_rounds$k.txt; pack
done
echo "== finish_pdl / side_pdl off against the default ($SECONDS s)"
timeout $(cap 150) python bench/mamba3_ab.py \
  --configs '[{"finish_pdl": false}, {"side_pdl": false}, {"finish_pdl": false, "side_pdl": false}]' \
  --cases $CASES --out $W/ab_pdl 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|rror|diff|bit" | cut -c1-400
rounds "$W/ab_pdl/mamba3_ab.json" | tee $W/queued_rounds_pdl.txt; pack
echo "== timelines ($SECONDS s)"
TL=c1_four_mixed,c5_three_even,c8_small_three
timeout $(cap 60) python bench/mamba3_timeline.py --cases $TL --out $W/tl_new 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "span" | cut -c1-200 | head -30; pack
timeout $(cap 60) python bench/mamba3_timeline.py --cases $TL --config '{"finish_pdl": false, "side_pdl": false}' \
  --out $W/tl_nopdl 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "span" | cut -c1-200 | head -30; pack
PYTHONPATH=bench/_ab/s40src timeout $(cap 60) python bench/mamba3_timeline.py --cases $TL --out $W/tl_s40 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "span" | cut -c1-200 | head -30; pack
echo "== done ($SECONDS s)"
