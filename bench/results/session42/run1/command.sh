#!/usr/bin/env bash
# Session 42 run 1: session 41's run 2, which never got a machine (device, one call; carry ["bench/_ab"]), plus
# timelines of the tree. Session 41's run 1 (H100) found the empty-slot changes slower (the intra kernel's `if
# active:` body +0 to +5 us per call at c2-c7; the sides' exit level) and the two programmatic dependent launches
# faster (-6 to -9 us per call over the code before them, bits identical). The tree (its commit in tree_commit.txt
# beside this file) is d80df47's kernels plus the two launches alone: the empty-slot changes and the first-chunk mask
# reverted, the side kernel's wait placed as in 2774cb7 (its chunk scalars loaded after the wait).
# Sides: ssmkit_s40 (d80df47, main before the session), ssmkit_s41n (2774cb7: run 1's tree), the tree.
# 1. the Mamba-3 graph CUDA tests (with the launches' bit test); 2. graph A/B of the three at the eight cases, twice
# (median queued time of 6 alternating rounds each; the 16 results' bits compared); 3. the tree with side_pdl,
# finish_pdl or both off against its default.
# Prediction: the tree -6 to -10 us queued per call against d80df47 at c1-c7 (run 1: s41e -> s41n -6 to -9, and
# without the intra change's +0 to +5), -7 to -9 at c8; against s41n -4 to +1 (c2-c7 better by the intra change's
# cost, c1 / c8 level); all bits identical; both launches off gives d80df47's times within +-2 us.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s42r1; mkdir -p $W
HERE=bench/results/session42/run1
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
timeout $(cap 120) python -m pytest -q -x tests/mamba3/test_graph_cuda.py 2>&1 | tail -3 | tee $W/tests.txt; pack
for k in 1 2; do
  echo "== graph A/B $k ($SECONDS s)"
  timeout $(cap 150) python bench/mamba3_ab.py --package $P/ssmkit_s40 --package $P/ssmkit_s41n --cases $CASES \
    --out $W/ab$k 2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|rror|diff|bit" | cut -c1-400
  rounds "$W/ab$k/mamba3_ab.json" | tee $W/queued_rounds$k.txt; pack
done
echo "== side_pdl / finish_pdl off against the default ($SECONDS s)"
timeout $(cap 150) python bench/mamba3_ab.py \
  --configs '[{"side_pdl": false}, {"finish_pdl": false}, {"finish_pdl": false, "side_pdl": false}]' \
  --cases $CASES --out $W/ab_pdl 2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|rror|diff|bit" | cut -c1-400
rounds "$W/ab_pdl/mamba3_ab.json" | tee $W/queued_rounds_pdl.txt; pack
echo "== timelines of the tree ($SECONDS s)"
timeout $(cap 60) python bench/mamba3_timeline.py --cases c1_four_mixed,c5_three_even,c8_small_three --out $W/tl_tree 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "^==|rror" | cut -c1-300; pack
echo "== done ($SECONDS s)"
