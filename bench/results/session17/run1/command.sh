#!/usr/bin/env bash
# Session 17 run 1 (device, one call): the session's Mamba-3 kernel cuts (offline SASS: intra 2720 -> 2512 with no
# spills; chunk state 2000 -> 1440, 110 registers; sides and chain built per state half; finish kernel's reduce
# programs first; the state passing's loads one chunk ahead). CUDA tests of the Mamba-3 graph and sincos; graph A/B of ssmkit_s15 (a3c3ecf, session 15's
# final code) against the working tree (queued GPU time per call, per-kernel split at c1, results compared).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -rfE tests/mamba3/test_graph_cuda.py tests/mamba3/test_sincos.py > "$OUT/pytest_cuda.log" 2>&1
echo "rc=$?"; tail -3 "$OUT/pytest_cuda.log"
echo "== mamba3 graph A/B ($SECONDS s)"
timeout 300 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s15 --out "$OUT" > "$OUT/mamba3_graph_ab.log" 2>&1
echo "rc=$?"; grep -vi "warn" "$OUT/mamba3_graph_ab.log" | grep -E "^c[0-9]|: _|diff|ident" | head -60
tar czf "$OUT/logs.tgz" -C "$OUT" pytest_cuda.log mamba3_graph_ab.log
echo "== done ($SECONDS s)"
