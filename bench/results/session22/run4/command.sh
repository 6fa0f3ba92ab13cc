#!/usr/bin/env bash
# Session 22 run 4 (device, one call): register caps and warps of the Mamba-3 kernels again, after sessions 17-22
# changed their register counts (the chunk-state kernel gained at 4 warps in run 2): forward sweep (scan capped at
# 128: four programs per SM; chunk state at 96 or uncapped) and backward sweep (chain at 8 warps or 2 stages; side
# kernel capped at 128: four programs per SM), direct launches, c1 and c4.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== mamba3 fwd config sweep ($SECONDS s)"
timeout 150 python bench/mamba3_config_sweep.py --fwd --out $OUT/fwd --cases c1_four_mixed,c4_short_and_longest \
  --configs '[{"scan_maxnreg": 128}, {"chunk_maxnreg": 96}, {"chunk_maxnreg": 0}]' 2>&1 | grep -v "Warn\|warn(" | tail -9
echo "== mamba3 bwd config sweep ($SECONDS s)"
timeout 200 python bench/mamba3_config_sweep.py --out $OUT/bwd --cases c1_four_mixed,c4_short_and_longest \
  --configs '[{"dstate_warps": 8}, {"dstate_stages": 2}, {"side_maxnreg": 128}]' 2>&1 | grep -v "Warn\|warn(" | tail -9
echo "== done ($SECONDS s)"
