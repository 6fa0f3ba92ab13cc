#!/usr/bin/env bash
# Session 22 run 8 (device, one call; bench/_ab carried): the finish kernel's fixed launch parameters, which no sweep
# covers: 2 or 8 warps instead of 4 (fin2, fin8), 16 or 4 tokens per GQA-reduce program instead of 8 (rt16, rt4);
# variants of the working tree's bwd.py (patches beside this file), mamba3_ab.py direct, same process, c1 and c4.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
timeout 300 python bench/mamba3_ab.py --baseline bench/_ab/fin2 --baseline bench/_ab/fin8 --baseline bench/_ab/rt16 \
  --baseline bench/_ab/rt4 --out "$OUT" --cases c1_four_mixed,c4_short_and_longest 2>&1 | grep -v "Warn\|warn(" | tail -14
echo "== done ($SECONDS s)"
