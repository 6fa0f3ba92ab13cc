#!/usr/bin/env bash
# Session 23 run 6 (device, one call): the Mamba-3 forward's chunk-state launch after run 4's split dots (128
# registers, four programs per SM at 4 warps): a 96-register cap (five per SM; offline 37 spill instructions) and
# 8 warps, against the default (mamba3_config_sweep.py --fwd, direct launches).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== forward config sweep ($SECONDS s)"
timeout 200 python bench/mamba3_config_sweep.py --fwd --out $OUT/sweep --cases c1_four_mixed,c4_short_and_longest \
  --configs '[{"chunk_maxnreg": 96}, {"chunk_warps": 8}, {"chunk_warps": 8, "chunk_maxnreg": 128}]' 2>&1 \
  | grep -v "Warn\|warn(" | sed -E 's/\{"chunk_warps": ([0-9]+).*"chunk_maxnreg": ([0-9]+)\}/warps \1 cap \2/' | tail -10
echo "== done ($SECONDS s)"
