#!/usr/bin/env bash
# Session 21 run 7 (device, one call): the B = 1 prefills with the whole forward in one graph ("whole": hidden
# states copied in, output and caches cloned out) against the default ("kernels" graph between eager cuBLAS
# projections), same process, same layer, alternating blocks of 10 calls (granite_call_gap.py --toggle).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src:bench
OUT="${OUT:-out}"; mkdir -p "$OUT"
timeout 300 python bench/granite_call_gap.py --calls 100 --workloads prefill_b1_l4096,prefill_b1_l16384 \
  --toggle '{"prefill_graphs": "whole"}' --out "$OUT/call_gap_whole.json" 2>&1 | grep -v Warn
echo "rc=$?"
