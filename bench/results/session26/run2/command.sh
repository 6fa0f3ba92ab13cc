#!/usr/bin/env bash
# Session 26 run 2 (device, one call; prepared in session 26, which was lent no device): launch configurations never
# measured through the public entry's graph, against the defaults, same process (`mamba3_ab.py --configs`, queued
# GPU ms per call and wall; every result compared with the default's): the state-gradient chain's chunk-parallel form
# (dstate_scan: local terms + elementwise reverse scan), last measured in sessions 5-6 with direct launches (slower
# then), before the graph ran the chain on a side stream. (The intra kernel's register caps are run 3's, on the
# branch whose intra kernel spills a third as much under them.)
# Why it may matter now: the graph launches the chain (H x S x 2 programs, 256 at c1, 218 registers x 128 threads
# each, offline) on a high-priority side stream just before the forward's chunk scan (168 x 128 per program). Two
# chain programs per SM leave 9 K of the 64 K registers, less than one scan program needs, so while the longest
# sequence's chain runs (~45 us at c1) the scan gets only the SMs that shorter sequences' chains have left. The scan
# form's kernels are light (offline: the local-term kernel 70 registers, one 64 x 64 x 128 product per chunk slot and
# head, all in parallel; the reverse scan 32 registers, a 62-instruction loop body per chunk), so the forward's scan
# could run beside them.
# Prediction: -5 to -15 us per call at c1 (queued), if that register contention is real; the scan form adds 78 MB of
# reads and writes (~20 us of HBM time, mostly beside the forward), so a loss of up to +5 us if it is not.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== A/B launch configs, public entry through its graph ($SECONDS s)"
timeout 400 python bench/mamba3_ab.py --cases c1_four_mixed,c4_short_and_longest,c5_three_even --out "$OUT" \
  --configs '[{"dstate_scan": true}, {"dstate_scan": true, "scan_block": 2048}]' 2>&1 | grep -v "Warn\|warn(" | cut -c1-400
echo "== done ($SECONDS s)"
