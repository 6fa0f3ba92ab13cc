#!/usr/bin/env bash
# Session 15 run 4 (device, one call): the forward reading the chunk-state kernel's angle cumsum (rotate kernel
# 2696 -> 944 SASS offline) and chunk scalars. CUDA tests of the Mamba-3 graph and sincos; graph A/B of ssmkit_s14
# (c4d7e89) against the working tree; forward config sweep (chunk-state kernel without its register cap); long
# single sequences' forward kernels in both carry forms.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -rfE tests/mamba3/test_graph_cuda.py tests/mamba3/test_sincos.py > "$OUT/pytest_cuda.log" 2>&1
echo "rc=$?"; tail -3 "$OUT/pytest_cuda.log"
echo "== mamba3 graph A/B ($SECONDS s)"
timeout 200 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s14 --out "$OUT" > "$OUT/mamba3_graph_ab.log" 2>&1
echo "rc=$?"; grep -vi "warn" "$OUT/mamba3_graph_ab.log" | grep -E "^c[0-9]|: _"
echo "== fwd sweep ($SECONDS s)"
timeout 120 python bench/mamba3_config_sweep.py --fwd --out "$OUT/fwd" --cases c1_four_mixed,c4_short_and_longest \
  --configs '[{"chunk_maxnreg": 0}]' > "$OUT/fwd_sweep.log" 2>&1; echo "rc=$?"; grep -E "^c[0-9]" "$OUT/fwd_sweep.log"
echo "== long forward ($SECONDS s)"
timeout 150 python bench/mamba3_long_fwd.py --out "$OUT" > "$OUT/long.log" 2>&1; echo "rc=$?"; grep "^T=" "$OUT/long.log"
tar czf "$OUT/logs.tgz" -C "$OUT" pytest_cuda.log mamba3_graph_ab.log fwd_sweep.log long.log
echo "== done ($SECONDS s)"
