#!/usr/bin/env bash
# Session 21 run 6 (device, one call; bench/_ab carried): the Mamba-3 side kernel summing the dQ~ / dK~ rows of
# HG heads per program (Mamba3BwdConfig.side_head_group). mamba3_ab.py, same process: the working tree (HG = 1,
# "new") against e7f32ce's kernels ("head": one head per program, the per-head partials) and the working tree with
# HG = 2, 4, 8 (bench/_ab/hgN: the default changed, nothing else); per-kernel split at c1.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
timeout 400 python bench/mamba3_ab.py --baseline bench/_ab/head --baseline bench/_ab/hg2 --baseline bench/_ab/hg4 \
  --baseline bench/_ab/hg8 --out "$OUT" --cases c1_four_mixed,c4_short_and_longest,c8_small_three > "$OUT/ab.log" 2>&1
echo "rc=$?"; grep -v "Warning\|warn" "$OUT/ab.log" | tail -30
