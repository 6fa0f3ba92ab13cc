#!/usr/bin/env bash
# Session 12 run 6 (device, one call): the final check of the session's code: CUDA tests (fast layer, Granite
# kernels, MappedIO), granite verify, granite bench, the varlen toggle A/B. Logs in one archive.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== CUDA tests ($SECONDS s)"
timeout 170 python -m pytest -q -p no:warnings tests/granite/test_fast_layer.py tests/kernels/granite tests/kernels/common \
  > "$OUT/pytest_cuda.log" 2>&1; echo "rc=$?"; grep -E "FAILED|Error" "$OUT/pytest_cuda.log" | head -8
echo "== granite verify ($SECONDS s)"
timeout 100 python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py --json "$OUT/granite_verify.json" \
  > "$OUT/granite_verify.log" 2>&1; echo "rc=$?"; tail -1 "$OUT/granite_verify.log"
echo "== granite bench ($SECONDS s)"
timeout 80 python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py --json "$OUT/granite_bench.json" \
  --plot "$OUT/granite_bench.png" > "$OUT/granite_bench.log" 2>&1; echo "rc=$?"; tail -9 "$OUT/granite_bench.log"
echo "== call gap, varlen, toggle ($SECONDS s)"
timeout 60 python bench/granite_call_gap.py --calls 40 --workloads prefill_varlen_b8 \
  --toggle '{"speculate_packed_prefill": false}' --out "$OUT/call_gap_varlen.json" 2>&1 | grep -v Warn | head -3
tar czf "$OUT/logs.tgz" -C "$OUT" pytest_cuda.log granite_verify.log granite_bench.log
echo "== done ($SECONDS s)"
