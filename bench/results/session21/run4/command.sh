#!/usr/bin/env bash
# Session 21 run 4 (device, one call): after the review fixes (6b7854c): the new CUDA test of both decode forms, the
# fast-layer CUDA tests, and the changed bench paths (decode sweep alone, the floor script at the defaults).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -p no:warnings tests/kernels/granite/test_decode_step.py tests/granite/test_fast_layer.py \
  > "$OUT/pytest_cuda.log" 2>&1; echo "rc=$?"; tail -1 "$OUT/pytest_cuda.log"; grep -E "FAILED|Error" "$OUT/pytest_cuda.log" | head -8
echo "== decode sweep ($SECONDS s)"
timeout 120 python bench/granite_layer_bench.py --variants none --kinds decode --decode-sweep --out "$OUT/sweep.json" \
  > "$OUT/sweep.log" 2>&1; echo "rc=$?"; grep "decode sweep" "$OUT/sweep.log" | sed -E "s/'deterministic': //" | cut -c1-200
echo "== decode floor ($SECONDS s)"
timeout 90 python bench/granite_decode_floor.py --out "$OUT" > "$OUT/decode_floor.log" 2>&1; echo "rc=$?"
tail -7 "$OUT/decode_floor.log"
tar czf "$OUT/logs.tgz" -C "$OUT" pytest_cuda.log sweep.log decode_floor.log; rm -f "$OUT"/*.log
echo "== done ($SECONDS s)"
