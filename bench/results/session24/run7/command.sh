#!/usr/bin/env bash
# Session 24 run 7 (device, one call; bench/_ab carried): the session's final Mamba-3 code (graph stream priorities
# (-1, -1, 0), both gate halves on the low-priority stream) against session 23's package (5ebf2f6) at every visible
# panel; CUDA tests; mamba3_bench (errors against float64); selfcheck; the judge of experiments v22.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
echo "== A/B public entry, graph ($SECONDS s)"
timeout 200 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s23 --out $OUT/ab_graph 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json" | cut -c1-220
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py tests/mamba3/test_sincos.py 2>&1 | tail -2
echo "== mamba3 bench ($SECONDS s)"
timeout 200 python bench/mamba3_bench.py --out "$OUT" --commit "$commit" --scales 1 > "$OUT/mamba3_bench.log" 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" "$OUT/mamba3_bench.log" | grep -E "^c[0-9]|targets|worst|json:" | head -24
echo "== mamba3 selfcheck ($SECONDS s)"
timeout 150 python -m ssmkit.cli mamba3 selfcheck --json "$OUT/mamba3_selfcheck.json" > "$OUT/mamba3_selfcheck.log" 2>&1
echo "rc=$?"; tail -3 "$OUT/mamba3_selfcheck.log"
echo "== mamba3 judge, experiments v22 ($SECONDS s)"
timeout 200 python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v22/solver.py \
  --json "$OUT/mamba3_judge.json" > "$OUT/mamba3_judge.log" 2>&1; echo "rc=$?"; tail -14 "$OUT/mamba3_judge.log"
echo "== done ($SECONDS s)"
