#!/usr/bin/env bash
# Session 21 run 2 (device, one call): the Granite layer with the conv-apart decode at B >= 16 (8 x 4 state tiles):
# CUDA tests (fast layer, Granite kernels, MappedIO), granite verify, granite bench, the decode A/B against the fused
# form, and where a decode call's time goes at the defaults (plus copy-rate ceilings at three sizes).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== CUDA tests ($SECONDS s)"
timeout 170 python -m pytest -q -p no:warnings tests/granite/test_fast_layer.py tests/kernels/granite tests/kernels/common \
  > "$OUT/pytest_cuda.log" 2>&1; echo "rc=$?"; tail -1 "$OUT/pytest_cuda.log"; grep -E "FAILED|Error" "$OUT/pytest_cuda.log" | head -8
echo "== granite verify ($SECONDS s)"
timeout 120 python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py --json "$OUT/granite_verify.json" \
  > "$OUT/granite_verify.log" 2>&1; echo "rc=$?"; tail -1 "$OUT/granite_verify.log"
echo "== granite bench ($SECONDS s)"
timeout 120 python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py --json "$OUT/granite_bench.json" \
  --plot "$OUT/granite_bench.png" > "$OUT/granite_bench.log" 2>&1; echo "rc=$?"; tail -9 "$OUT/granite_bench.log"
echo "== decode A/B ($SECONDS s)"
timeout 90 python bench/granite_decode_ab.py --side fused='ssmkit:{"decode_conv_apart": false}' --side default=ssmkit \
  --out "$OUT" > "$OUT/decode_ab.log" 2>&1; echo "rc=$?"; tail -4 "$OUT/decode_ab.log"
echo "== decode floor ($SECONDS s)"
timeout 90 python bench/granite_decode_floor.py --out "$OUT" > "$OUT/decode_floor.log" 2>&1; echo "rc=$?"
tail -7 "$OUT/decode_floor.log"
tar czf "$OUT/logs.tgz" -C "$OUT" pytest_cuda.log granite_verify.log granite_bench.log decode_ab.log decode_floor.log
rm -f "$OUT"/*.log
echo "== done ($SECONDS s)"
