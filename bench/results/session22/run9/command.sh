#!/usr/bin/env bash
# Session 22 run 9 (device, one call; bench/_ab carried): run 8's two gains combined (the finish kernel at 2 warps:
# 0.042 -> 0.037 ms at c1; 16 tokens per GQA-reduce program: 0.036), and 32 tokens, 1 warp: variants of the working
# tree's bwd.py (patches beside this file: w<warps>t<tokens>), mamba3_ab.py direct, same process, c1 and c4.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
timeout 300 python bench/mamba3_ab.py --baseline bench/_ab/w2t16 --baseline bench/_ab/w2t32 --baseline bench/_ab/w4t32 \
  --baseline bench/_ab/w1t16 --out "$OUT" --cases c1_four_mixed,c4_short_and_longest 2>&1 | grep -v "Warn\|warn(" \
  | grep -E "^c[0-9]|finish|json" | sed 's/_m3b_sides.*_m3b_finish_kernel/... finish/' | cut -c1-200
echo "== done ($SECONDS s)"
