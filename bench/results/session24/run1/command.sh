#!/usr/bin/env bash
# Session 24 run 1 (device, one call): the gate's in_proj GEMM on a side stream (FastMambaLayer.prefill_gate_stream,
# "concurrent" / "after_xbcdt") against one in_proj GEMM: CUDA tests of the new path, then same-process toggled
# A/Bs (granite_call_gap.py --toggle, alternating blocks of 10 calls) on the three prefill bench workloads.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== CUDA tests ($SECONDS s)"
timeout 240 python -m pytest -q -p no:warnings tests/granite/test_fast_layer.py -k "gate or cuda_graph or mapped_prefill" 2>&1 | tail -5
for mode in after_xbcdt concurrent; do
  echo "== call gap, toggle $mode ($SECONDS s)"
  timeout 240 python bench/granite_call_gap.py --workloads prefill_b1_l4096,prefill_b1_l16384,prefill_varlen_b8 \
    --calls 60 --toggle "{\"prefill_gate_stream\": \"$mode\"}" --out $OUT/call_gap_$mode.json 2>&1 \
    | grep -v "Warn\|warn(" | grep "event\|toggle"
done
echo "== done ($SECONDS s)"
