#!/usr/bin/env bash
# Session 21 run 5 (device, one call; bench/_ab carried): what the per-head dq / dk partials cost the Mamba-3
# backward, by leaving stages out (timing only: the variants' dq / dk are wrong). Variants of the working tree's
# bwd.py (patches beside this file): nostore (the side kernel's per-head (T, H, N) dq_hat / dk_hat stores predicated
# off, the computation kept), noreduce (the finish kernel's GQA head sums replaced by zeros: no reads), both.
# mamba3_ab.py: the working tree ("new") against the three, same process, per-kernel split at c1.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
timeout 300 python bench/mamba3_ab.py --baseline bench/_ab/nostore --baseline bench/_ab/noreduce \
  --baseline bench/_ab/both --out "$OUT" --cases c1_four_mixed,c4_short_and_longest > "$OUT/ab.log" 2>&1
echo "rc=$?"; grep -v "Warning\|warn" "$OUT/ab.log" | tail -30
