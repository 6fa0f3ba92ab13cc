#!/usr/bin/env bash
# Session 12 run 5 (device, one call): unmasked prefills on the "mapped" graph (mapped_prefill_max_tokens) and the
# review fixes. CUDA tests (fast layer, Granite kernels, MappedIO); same-process toggle A/Bs of the token bound at
# L=4096 (mapped -> kernels) and L=16384 (kernels -> mapped) with their call gaps; granite verify; granite bench.
# Everything goes back in one archive but the JSONs (the device returns at most 8 files).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== CUDA tests ($SECONDS s)"
timeout 170 python -m pytest -q -p no:warnings tests/granite/test_fast_layer.py tests/kernels/granite tests/kernels/common \
  > "$OUT/pytest_cuda.log" 2>&1; echo "rc=$?"; grep -E "FAILED|Error" "$OUT/pytest_cuda.log" | head -8
echo "== L=4096: mapped (default) vs kernels ($SECONDS s)"
timeout 60 python bench/granite_call_gap.py --calls 40 --workloads prefill_b1_l4096 \
  --toggle '{"mapped_prefill_max_tokens": 0}' --out "$OUT/call_gap_l4096.json" 2>&1 | grep -v Warn
echo "== L=16384: kernels (default) vs mapped ($SECONDS s)"
timeout 60 python bench/granite_call_gap.py --calls 40 --workloads prefill_b1_l16384 \
  --toggle '{"mapped_prefill_max_tokens": 1073741824}' --out "$OUT/call_gap_l16384.json" 2>&1 | grep -v Warn
echo "== granite verify ($SECONDS s)"
timeout 100 python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py --json "$OUT/granite_verify.json" \
  > "$OUT/granite_verify.log" 2>&1; echo "rc=$?"; tail -1 "$OUT/granite_verify.log"
echo "== granite bench ($SECONDS s)"
timeout 80 python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py --json "$OUT/granite_bench.json" \
  > "$OUT/granite_bench.log" 2>&1; echo "rc=$?"; tail -9 "$OUT/granite_bench.log"
tar czf "$OUT/logs.tgz" -C "$OUT" pytest_cuda.log granite_verify.log granite_bench.log
echo "== done ($SECONDS s)"
