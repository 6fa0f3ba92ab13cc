#!/usr/bin/env bash
# Session 15 run 3 (device, one call): the code after three more changes (side kernels capped at 168 registers;
# the dPhi carry kernel; the forward's stored chunk scalars read by the scan and the intra kernel). CUDA tests of
# the Mamba-3 graph and sincos; graph A/B of ssmkit_s14 (c4d7e89, session 14's final kernels) against the working
# tree; backward config sweep (intra kernel at 8 warps) and forward sweep (scan without its register cap); the
# backward's per-kernel split on one long sequence (the carry kernel at 8192 / 32768 / 131072 tokens).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -rfE tests/mamba3/test_graph_cuda.py tests/mamba3/test_sincos.py > "$OUT/pytest_cuda.log" 2>&1
echo "rc=$?"; tail -3 "$OUT/pytest_cuda.log"
echo "== mamba3 graph A/B ($SECONDS s)"
timeout 200 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s14 --out "$OUT" > "$OUT/mamba3_graph_ab.log" 2>&1
echo "rc=$?"; grep -vi "warn" "$OUT/mamba3_graph_ab.log" | grep -E "^c[0-9]|: _"
echo "== bwd sweep ($SECONDS s)"
timeout 120 python bench/mamba3_config_sweep.py --out "$OUT/bwd" --cases c1_four_mixed,c4_short_and_longest \
  --configs '[{"num_warps": 8}]' > "$OUT/bwd_sweep.log" 2>&1; echo "rc=$?"; grep -E "^c[0-9]" "$OUT/bwd_sweep.log"
echo "== fwd sweep ($SECONDS s)"
timeout 120 python bench/mamba3_config_sweep.py --fwd --out "$OUT/fwd" --cases c1_four_mixed,c4_short_and_longest \
  --configs '[{"scan_maxnreg": 0}]' > "$OUT/fwd_sweep.log" 2>&1; echo "rc=$?"; grep -E "^c[0-9]" "$OUT/fwd_sweep.log"
echo "== long backward ($SECONDS s)"
timeout 200 python bench/mamba3_long_fwd.py --bwd --out "$OUT" > "$OUT/long.log" 2>&1; echo "rc=$?"; grep "^T=.*backward" "$OUT/long.log"
tar czf "$OUT/logs.tgz" -C "$OUT" pytest_cuda.log mamba3_graph_ab.log bwd_sweep.log fwd_sweep.log long.log
echo "== done ($SECONDS s)"
