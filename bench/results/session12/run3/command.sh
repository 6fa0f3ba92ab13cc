#!/usr/bin/env bash
# Session 12 run 3 (device, one call): the final Granite measurement of the session's code. CUDA tests (fast layer,
# Granite kernels, MappedIO), granite verify, the judge on experiments v15, granite bench, the per-workload profile,
# the varlen call gap with the speculation toggle A/B, the host cost of the pieces.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== CUDA tests ($SECONDS s)"
timeout 150 python -m pytest -q -p no:warnings tests/granite/test_fast_layer.py tests/kernels/granite tests/kernels/common \
  > "$OUT/pytest_cuda.log" 2>&1; echo "rc=$?"; grep -E "passed|failed|FAILED|Error" "$OUT/pytest_cuda.log" | tail -5
echo "== granite verify ($SECONDS s)"
timeout 100 python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py --json "$OUT/granite_verify.json" \
  > "$OUT/granite_verify.log" 2>&1; echo "rc=$?"; tail -1 "$OUT/granite_verify.log"
echo "== granite bench ($SECONDS s)"
timeout 80 python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py --json "$OUT/granite_bench.json" \
  --plot "$OUT/granite_bench.png" > "$OUT/granite_bench.log" 2>&1; echo "rc=$?"; tail -10 "$OUT/granite_bench.log"
echo "== call gap, varlen, toggle ($SECONDS s)"
timeout 60 python bench/granite_call_gap.py --calls 40 --workloads prefill_varlen_b8 \
  --toggle '{"speculate_packed_prefill": false}' --out "$OUT/call_gap_varlen.json" 2>&1 | grep -v Warn
echo "== granite profile ($SECONDS s)"
timeout 50 python bench/granite_profile.py --calls 20 --out "$OUT/granite_profile.json" > "$OUT/granite_profile.log" 2>&1
echo "rc=$?"; grep -E "^==|GPU sum" "$OUT/granite_profile.log"
echo "== granite judge, experiments v15 ($SECONDS s)"
timeout 240 python -m ssmkit.cli granite judge --candidate experiments/granite/versions/v15/candidate.py \
  --json "$OUT/judge.json" > "$OUT/granite_judge.log" 2>&1; echo "rc=$?"; tail -12 "$OUT/granite_judge.log"
tar czf "$OUT/logs.tgz" -C "$OUT" pytest_cuda.log granite_verify.log granite_bench.log granite_profile.log granite_judge.log
echo "== done ($SECONDS s)"
