#!/usr/bin/env bash
# Session 43 run 1: session 42's run 1, unchanged but for its paths (device, one call; carry ["bench/_ab"]).
# The tree (its commit in tree_commit.txt beside this file; its code is ef53f2b's)
# is main's session-41 code (d80df47's kernels plus two programmatic dependent launches: the side kernel after the
# intra kernel, the finish kernel after the dPhi carry kernel; never measured as a whole: session 41's run 2 did not
# start) plus a third launch: the intra kernel by PDL after the forward's chunk scan (Mamba3BwdConfig.intra_pdl,
# default True; the scan lets its successor start at once on sm_90+).
# Sides: ssmkit_s40 (d80df47, session 40's main), ssmkit_s42m (32314c1, session 41's main), the tree.
# 1. the Mamba-3 graph CUDA tests (the launches' bit test, now with intra_pdl); 2. graph A/B of the three at the
# eight cases, twice (median queued time of 6 alternating rounds each; the 16 results' bits compared); 3. the tree
# with intra_pdl off, with side_pdl off (the side kernel now starts only after every intra program passed its wait:
# does that cost c8's +4 us of run 1b?), and with all three launches off, against its default; 4. timelines at c1 /
# c5 / c8 (the tree, and with intra_pdl off). Run 1b (this session, trimmed) measured step 2 without d80df47 once.
# Prediction: s42m -6 to -10 us queued per call against s40 at every case (session 41's run 1: the two launches -6 to
# -9 over the code before them); the tree -2 to -6 us against s42m at c1-c7 (the scan's last wave, ~3 programs per
# SM over ~3 waves, overlapped by the intra programs' dY V^T, M o G split and stores), -1 to -3 at c8; all three
# launches off gives s40's times within +-2 us; every result bit-identical; in the timeline the intra kernel starts
# before the scan ends. Risk: a capture that refuses (or mis-orders) a programmatic edge where the intra kernel also
# joins the state-gradient chain's stream; the CUDA bit test runs first.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s43r1; mkdir -p $W
HERE=bench/results/session43/run1
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
ab() {  # ab NAME ARGS...: one graph A/B, its lines and its queued rounds
  local name=$1; shift
  timeout $(cap 150) python bench/mamba3_ab.py "$@" --cases $CASES --out $W/$name 2>&1 | grep -v "Warn\|warn(" \
    | grep -E "^c[0-9]|json|rror|diff|bit" | cut -c1-400
  rounds "$W/$name/mamba3_ab.json" | tee $W/queued_rounds_$name.txt; pack
}
echo "== CUDA tests ($SECONDS s)"
timeout $(cap 150) python -m pytest -q -x tests/mamba3/test_graph_cuda.py 2>&1 | tail -3 | tee $W/tests.txt; pack
for k in 1 2; do
  echo "== graph A/B $k: s40, s42m, the tree ($SECONDS s)"
  ab ab$k --package $P/ssmkit_s40 --package $P/ssmkit_s42m
done
echo "== the tree's launches off against its default ($SECONDS s)"
ab ab_pdl --configs '[{"intra_pdl": false}, {"side_pdl": false}, {"intra_pdl": false, "side_pdl": false, "finish_pdl": false}]'
echo "== timelines ($SECONDS s)"
TL=c1_four_mixed,c5_three_even,c8_small_three
timeout $(cap 60) python bench/mamba3_timeline.py --cases $TL --out $W/tl_tree 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "^==|rror" | cut -c1-300; pack
timeout $(cap 60) python bench/mamba3_timeline.py --cases $TL --config '{"intra_pdl": false}' --out $W/tl_nointra 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "^==|rror" | cut -c1-300; pack
echo "== done ($SECONDS s)"
