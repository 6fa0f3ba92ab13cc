#!/usr/bin/env bash
# Session 22 run 10 (device, one call; bench/_ab carried): run 8's finish-kernel variants again (2 warps: fin2; 16
# tokens per GQA-reduce program: rt16; patches in run8/), since run 9's combination of the two measured level with
# the default: same process, four cases, twice over (two mamba3_ab.py invocations), to see the spread.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
for rep in 1 2; do
  timeout 200 python bench/mamba3_ab.py --baseline bench/_ab/fin2 --baseline bench/_ab/rt16 --out "$OUT/rep$rep" \
    --cases c1_four_mixed,c3_five_mixed,c4_short_and_longest,c7_one_off_chunk_edges 2>&1 | grep -v "Warn\|warn(" \
    | grep -E "^c[0-9]" | cut -c1-150
done
echo "== done ($SECONDS s)"
