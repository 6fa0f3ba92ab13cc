#!/usr/bin/env bash
# Session 22 run 7 (device, one call): the Granite layer's correctness on the GPU at the session's final code, which
# holds session 21's last commit (6d5c8d2: the decode conv-state roll in one helper, `_decode_roll`), checked then
# only on the CPU: CUDA tests (fast layer, Granite kernels, MappedIO) and `granite verify`.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -p no:warnings -p no:cacheprovider tests/granite/test_fast_layer.py tests/kernels/granite \
  tests/kernels/common > "$OUT/pytest_cuda.log" 2>&1; echo "rc=$?"; tail -1 "$OUT/pytest_cuda.log"
grep -E "FAILED|Error" "$OUT/pytest_cuda.log" | head -8
echo "== granite verify ($SECONDS s)"
timeout 150 python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py --json "$OUT/granite_verify.json" \
  > "$OUT/granite_verify.log" 2>&1; echo "rc=$?"; tail -1 "$OUT/granite_verify.log"
tar czf "$OUT/logs.tgz" -C "$OUT" pytest_cuda.log granite_verify.log && rm -f "$OUT"/*.log
echo "== done ($SECONDS s)"
