#!/usr/bin/env bash
# Session 21 run 8 (device, one call): the decode kernels alone at B = 16 and 32 too (the conv-apart threshold,
# CONV_APART_MIN_BATCH = 16, had been set between the measured 8 and 64), fused vs apart at their default tiles.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
timeout 200 python bench/granite_layer_bench.py --variants none --kinds decode --decode-sweep --out "$OUT/sweep.json" \
  > "$OUT/sweep.log" 2>&1; echo "rc=$?"
python - "$OUT/sweep.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["decode_sweep"]:
    print(r["batch"], r["block_p"], r["num_warps"], "apart" if r["conv_apart"] else "fused", round(r.get("us", -1), 2),
          r.get("error", ""))
PY
