#!/usr/bin/env bash
# Session 26 run 2 (device, one call; prepared in session 26, which was lent no device): launch configurations never
# measured through the public entry's graph, against the defaults, same process (`mamba3_ab.py --configs`, queued
# GPU ms per call and wall; every result compared with the default's):
#   - the state-gradient chain's chunk-parallel form (dstate_scan: local terms + elementwise reverse scan), last
#     measured in sessions 5-6 with direct launches (slower then), before the graph ran the chain on a side stream;
#   - the intra kernel under a register cap (intra_maxnreg, new in session 26): three 4-warp programs per SM at 168,
#     two 8-warp programs at 128 (offline: 355 / 319 spill instructions against 22 uncapped at 255 registers).
# Predictions: dstate_scan +/-5 us (the chain is latency-bound on ~2 programs per SM beside the forward; the scan form
# adds 78 MB of reads and writes); the caps: +5 us (spills) to -10 us (occupancy 12 % achieved, long-scoreboard bound).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== A/B launch configs, public entry through its graph ($SECONDS s)"
timeout 400 python bench/mamba3_ab.py --cases c1_four_mixed,c4_short_and_longest,c5_three_even --out "$OUT" \
  --configs '[{"dstate_scan": true}, {"dstate_scan": true, "scan_block": 2048}, {"intra_maxnreg": 168},
              {"num_warps": 8, "intra_maxnreg": 128}]' 2>&1 | grep -v "Warn\|warn(" | cut -c1-400
echo "== done ($SECONDS s)"
