#!/usr/bin/env bash
# Session 42 run 1b: run 1 trimmed to what ~200 s of device time holds (run 1 got no machine in 17 tries; its
# command.sh holds the full plan and the predictions). The tree: tree_commit.txt beside this file.
# 1. the Mamba-3 graph CUDA tests (the launches' bit test with intra_pdl); 2. graph A/B of ssmkit_s42m (32314c1,
# session 41's main) against the tree at the eight cases (median queued time of 6 alternating rounds; bits compared).
# Prediction (run 1's): the tree -2 to -6 us queued per call at c1-c7, -1 to -3 at c8, every result bit-identical.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s42r1b; mkdir -p $W
HERE=bench/results/session42/run1b
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "tree $(cat $HERE/tree_commit.txt 2>/dev/null || echo unknown)" | tee $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash $HERE/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run1b.tgz" -C $W .; }
CASES=c1_four_mixed,c2_three_long,c3_five_mixed,c4_short_and_longest,c5_three_even,c6_two_short_two_long
CASES=$CASES,c7_one_off_chunk_edges,c8_small_three
echo "== CUDA tests ($SECONDS s)"
timeout 60 python -m pytest -q -x tests/mamba3/test_graph_cuda.py 2>&1 | tail -3 | tee $W/tests.txt; pack
echo "== graph A/B: s42m against the tree ($SECONDS s)"
timeout 120 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s42m --cases $CASES --out $W/ab 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|rror|diff|bit" | cut -c1-400; pack
echo "== done ($SECONDS s)"
