#!/usr/bin/env bash
# Session 19 run 6 (device, one call): final measurement after the side kernel's dots were split into bf16 as well
# (uncapped): run 5 measured it as fast as tf32 (c1 sides 0.189 vs 0.188 ms) and run 4 closer to float64.
# CUDA tests of the graph and sincos; judge of experiments v16 (exported at this commit); bench (fwd-only, bwd-only, full call at 1x / 2x / 4x lengths,
# errors against float64 and the official kernels' errors); selfcheck.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -rfE tests/mamba3/test_graph_cuda.py tests/mamba3/test_sincos.py > "$OUT/pytest_cuda.log" 2>&1
echo "rc=$?"; tail -3 "$OUT/pytest_cuda.log"
echo "== mamba3 judge, experiments v16 ($SECONDS s)"
timeout 170 python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v16/solver.py \
  --json "$OUT/mamba3_judge.json" > "$OUT/mamba3_judge.log" 2>&1; echo "rc=$?"; tail -12 "$OUT/mamba3_judge.log"
echo "== mamba3 bench ($SECONDS s)"
timeout 220 python bench/mamba3_bench.py --out "$OUT" --commit "$commit" --scales 1 > "$OUT/mamba3_bench.log" 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" "$OUT/mamba3_bench.log" | grep -E "^c[0-9]|targets|json:|worst|error" | head -40
echo "== mamba3 selfcheck ($SECONDS s)"
timeout 120 python -m ssmkit.cli mamba3 selfcheck --json "$OUT/mamba3_selfcheck.json" > "$OUT/mamba3_selfcheck.log" 2>&1
echo "rc=$?"; tail -12 "$OUT/mamba3_selfcheck.log"
tar czf "$OUT/logs.tgz" -C "$OUT" pytest_cuda.log mamba3_judge.log mamba3_bench.log mamba3_selfcheck.log


echo "== done ($SECONDS s)"
