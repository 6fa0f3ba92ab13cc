#!/usr/bin/env bash
# Session 26 run 1 (device, one call; prepared in session 26, which was lent no device): the GPU checks that session 25
# left undone for its final Mamba-3 code (bf16 per-head dq / dk rows by default):
#   1. the CUDA graph tests on that default;
#   2. `mamba3_bench` with the "fp32" rows option (never run on the GPU in its final code): errors against float64
#      should repeat session 24's (dq / dk 1.65e-3), the others bit-identical to the default's;
#   3. the judge of experiments v24 (exported in session 26 from 12b9c41, the final code of session 25).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
echo "== CUDA graph tests ($SECONDS s)"
timeout 200 python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py > "$OUT/pytest_graph_cuda.log" 2>&1
echo "rc=$?"; tail -3 "$OUT/pytest_graph_cuda.log"
echo "== mamba3 bench, fp32 rows ($SECONDS s)"
mkdir -p "$OUT/fp32_rows"
timeout 200 python bench/mamba3_bench.py --out "$OUT/fp32_rows" --commit "$commit" --scales 1 \
  --cases-bwd-config '{"head_partials": "fp32"}' > "$OUT/fp32_rows/mamba3_bench.log" 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" "$OUT/fp32_rows/mamba3_bench.log" | grep -E "^c[0-9]|targets|json:" | head -20
echo "== mamba3 judge, experiments v24 ($SECONDS s)"
timeout 220 python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v24/solver.py \
  --json "$OUT/mamba3_judge.json" > "$OUT/mamba3_judge.log" 2>&1; echo "rc=$?"; tail -14 "$OUT/mamba3_judge.log"
echo "== done ($SECONDS s)"
