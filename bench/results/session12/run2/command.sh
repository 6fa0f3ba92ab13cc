#!/usr/bin/env bash
# Session 12 run 2 (device, one call): the speculative packed prefill with the replay first and the facts on a side
# stream (f7930b5). Host cost of the pieces; the CUDA tests it touches; the varlen call's gaps and the same-process
# toggle A/B against speculation off.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== host primitives ($SECONDS s)"
timeout 90 python bench/granite_host_timeline.py --primitives-only --reps 300 --out "$OUT/host_primitives.json" 2>&1 | grep -v Warn
echo "== CUDA tests: mask facts, mapped / guessed prefill ($SECONDS s)"
timeout 150 python -m pytest -q -p no:warnings tests/kernels/granite/test_mask_facts.py tests/granite/test_fast_layer.py \
  -k "mask_facts or guessed or mapped_prefill or prefill_cuda_graph" > "$OUT/pytest_cuda.log" 2>&1
echo "rc=$?"; tail -3 "$OUT/pytest_cuda.log"
echo "== call gap, varlen, toggle speculation off ($SECONDS s)"
timeout 120 python bench/granite_call_gap.py --calls 40 --workloads prefill_varlen_b8 \
  --toggle '{"speculate_packed_prefill": false}' --out "$OUT/call_gap_varlen.json" 2>&1 | grep -v Warn
echo "== done ($SECONDS s)"
