#!/usr/bin/env bash
# Session 14 run 3 (device, one call): the state-gradient chain with its next loads issued by hand. CUDA tests of the
# Mamba-3 graph, sincos and op; graph A/B of session 13's package (ssmkit_s13 = dcf38cd) and run 1's (ssmkit_r1 =
# 887b520) against the working tree (queued GPU time per call); kernel A/B of session 13's fwd.py / bwd.py
# (bench/_ab/s13k) against the working tree's, launched directly on one stream (per-kernel times alone).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -rfE tests/mamba3/test_graph_cuda.py tests/mamba3/test_sincos.py tests/mamba3/test_kernels_op.py \
  > "$OUT/pytest_cuda.log" 2>&1; echo "rc=$?"; tail -3 "$OUT/pytest_cuda.log"
echo "== mamba3 graph A/B ($SECONDS s)"
mkdir -p "$OUT/graph" "$OUT/kernels"
timeout 200 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s13 --package bench/_ab/pkgs/ssmkit_r1 \
  --out "$OUT/graph" > "$OUT/mamba3_graph_ab.log" 2>&1
echo "rc=$?"; grep -vi "warn" "$OUT/mamba3_graph_ab.log" | grep -E "^c[0-9]|new:"
echo "== mamba3 kernel A/B, direct ($SECONDS s)"
timeout 150 python bench/mamba3_ab.py --baseline bench/_ab/s13k --cases c1_four_mixed,c4_short_and_longest,c8_small_three \
  --out "$OUT/kernels" > "$OUT/mamba3_kernel_ab.log" 2>&1
echo "rc=$?"; grep -vi "warn" "$OUT/mamba3_kernel_ab.log" | tail -6
tar czf "$OUT/logs.tgz" -C "$OUT" pytest_cuda.log mamba3_graph_ab.log mamba3_kernel_ab.log
echo "== done ($SECONDS s)"
