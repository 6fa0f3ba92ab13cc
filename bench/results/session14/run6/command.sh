#!/usr/bin/env bash
# Session 14 run 6 (device, one call): four more tensors posted (angles, dangles, dfinal_ssm, final_ssm). CUDA tests
# of the Mamba-3 graph (bits against the direct call), sincos and op; graph A/B of run 3's package (ssmkit_r3 =
# 6e47ae3) against the working tree (queued GPU time per call).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -rfE tests/mamba3/test_graph_cuda.py tests/mamba3/test_sincos.py tests/mamba3/test_kernels_op.py \
  > "$OUT/pytest_cuda.log" 2>&1; echo "rc=$?"; tail -3 "$OUT/pytest_cuda.log"
echo "== mamba3 graph A/B ($SECONDS s)"
timeout 200 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_r3 --out "$OUT" > "$OUT/mamba3_graph_ab.log" 2>&1
echo "rc=$?"; grep -vi "warn" "$OUT/mamba3_graph_ab.log" | grep -E "^c[0-9]|: _"
tar czf "$OUT/logs.tgz" -C "$OUT" pytest_cuda.log mamba3_graph_ab.log
echo "== done ($SECONDS s)"
