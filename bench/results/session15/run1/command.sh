#!/usr/bin/env bash
# Session 15 run 1 (device, one call): CUDA tests of the Mamba-3 graph, sincos and op (incl. session 14's rewritten
# rotate-stream test, never run on a GPU before); long single sequences' forward kernels in both carry forms
# (bench/mamba3_long_fwd.py); graph A/B, queued GPU time per call: ssmkit_r6 (4e6f651, session 14 run 6's code),
# ssmkit_s14 (c4d7e89 = session 14's final kernels) and the working tree (side kernels with stored chunk scalars
# and one cos/sin read per pair).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== CUDA tests ($SECONDS s)"
timeout 220 python -m pytest -q -rfE tests/mamba3/test_graph_cuda.py tests/mamba3/test_sincos.py tests/mamba3/test_kernels_op.py \
  > "$OUT/pytest_cuda.log" 2>&1; echo "rc=$?"; tail -3 "$OUT/pytest_cuda.log"
echo "== long forward ($SECONDS s)"
timeout 150 python bench/mamba3_long_fwd.py --out "$OUT" > "$OUT/long_fwd.log" 2>&1; echo "rc=$?"; grep "^T=" "$OUT/long_fwd.log"
echo "== mamba3 graph A/B ($SECONDS s)"
timeout 220 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_r6 --package bench/_ab/pkgs/ssmkit_s14 --out "$OUT" > "$OUT/mamba3_graph_ab.log" 2>&1
echo "rc=$?"; grep -vi "warn" "$OUT/mamba3_graph_ab.log" | grep -E "^c[0-9]|: _"
tar czf "$OUT/logs.tgz" -C "$OUT" pytest_cuda.log long_fwd.log mamba3_graph_ab.log
echo "== done ($SECONDS s)"
