#!/usr/bin/env bash
# Session 14 run 2 (device, one call): dv apart (intra beside the chain, dv beside the sides; ssmkit_r2 = 7b9ed42) and the scan on the second side stream (the working tree). CUDA tests of the Mamba-3 graph,
# sincos and op; same-process A/B of session 13's package (bench/_ab/pkgs/ssmkit_s13, made by bench/ab_package.py
# from dcf38cd; ssmkit_r1 = 887b520, run 1's code) against the working tree, both through their graphs (queued GPU time per call, wall, kernel split).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -rfE tests/mamba3/test_graph_cuda.py tests/mamba3/test_sincos.py tests/mamba3/test_kernels_op.py \
  > "$OUT/pytest_cuda.log" 2>&1; echo "rc=$?"; tail -3 "$OUT/pytest_cuda.log"
echo "== mamba3 A/B s13 package vs working tree ($SECONDS s)"
timeout 300 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s13 --package bench/_ab/pkgs/ssmkit_r1 --package bench/_ab/pkgs/ssmkit_r2 --out "$OUT" > "$OUT/mamba3_ab.log" 2>&1
echo "rc=$?"; grep -vi "warn" "$OUT/mamba3_ab.log" | tail -14
tar czf "$OUT/logs.tgz" -C "$OUT" pytest_cuda.log mamba3_ab.log
echo "== done ($SECONDS s)"
