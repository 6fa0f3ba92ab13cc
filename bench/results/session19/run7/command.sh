#!/usr/bin/env bash
# Session 19 run 7: M o G stored split into bf16 (hi, lo) by the intra kernel, so that the side kernel's four
# programs of a chunk stop splitting it (offline: sides 8752 -> 8176 SASS over four branches, 255 -> 247 registers;
# intra 2768 -> 2912, 18 spill instructions). Same-process A/B against 0f0ef2a's kernels (bench/_ab/s19_before:
# its fwd.py and bwd.py), c1 and c4.
set -u
export PYTHONPATH=src
timeout 200 python bench/mamba3_ab.py --baseline bench/_ab/s19_before --out $OUT/ab \
  --cases c1_four_mixed,c4_short_and_longest 2>&1 | grep -v "Warn\|warn(" | tail -30
