#!/usr/bin/env bash
# Session 12 run 1 (device, one call): the speculative packed prefill (speculate_packed_prefill).
# CUDA tests of the fast layer and the Granite kernels; the varlen call's gaps with the guess on, and a same-process
# toggle A/B against it off; granite verify; granite bench (defaults).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -p no:warnings tests/granite/test_fast_layer.py tests/kernels/granite > "$OUT/pytest_cuda.log" 2>&1
echo "rc=$?"; tail -3 "$OUT/pytest_cuda.log"
echo "== call gap, varlen, toggle speculation off ($SECONDS s)"
timeout 120 python bench/granite_call_gap.py --calls 40 --workloads prefill_varlen_b8 \
  --toggle '{"speculate_packed_prefill": false}' --out "$OUT/call_gap_varlen.json" 2>&1 | grep -v Warn
echo "== granite verify ($SECONDS s)"
timeout 120 python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py --json "$OUT/granite_verify.json" \
  > "$OUT/granite_verify.log" 2>&1; echo "rc=$?"; tail -1 "$OUT/granite_verify.log"
echo "== granite bench ($SECONDS s)"
timeout 110 python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py --json "$OUT/granite_bench.json" \
  > "$OUT/granite_bench.log" 2>&1; echo "rc=$?"; tail -12 "$OUT/granite_bench.log"
tar czf "$OUT/logs.tgz" -C "$OUT" pytest_cuda.log granite_verify.log granite_bench.log 2>/dev/null
echo "== done ($SECONDS s)"
