#!/usr/bin/env bash
# Session 24 run 2 (device, one call): why run 1's gate-stream toggle was slower (L = 4096 456 -> 758 us) and which
# CUDA assertion failed: the tests with their tracebacks, then the call gap and kernel profile of the toggled layer.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== CUDA tests ($SECONDS s)"
timeout 240 python -m pytest -x -q -p no:warnings tests/granite/test_fast_layer.py -k "gate_stream" 2>&1 | grep -v "^    " | tail -30
for mode in after_xbcdt; do
  echo "== call gap, set $mode ($SECONDS s)"
  timeout 200 python bench/granite_call_gap.py --workloads prefill_b1_l4096 --calls 20 \
    --set "{\"prefill_gate_stream\": \"$mode\"}" --out $OUT/call_gap_$mode.json 2>&1 | grep -v "Warn\|warn(" | tail -4
  echo "== profile, set $mode ($SECONDS s)"
  timeout 200 python bench/granite_profile.py --workloads prefill_b1_l4096 --calls 20 \
    --set "{\"prefill_gate_stream\": \"$mode\"}" --out $OUT/profile_$mode.json 2>&1 | grep -v "Warn\|warn(" | tail -25
done
echo "== done ($SECONDS s)"
