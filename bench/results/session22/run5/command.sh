#!/usr/bin/env bash
# Session 22 run 5 (device, one call; bench/_ab carried): the final Mamba-3 code of the session (a37bb5a: the
# chunk-state kernel at 4 warps, uncapped): the public entry (graph) against 6d5c8d2's package (ssmkit_s21) at every
# visible case; CUDA tests of the graph and sincos; mamba3_bench.py at scales 1 and 2 (errors against float64, fwd /
# bwd / full GPU and wall); `mamba3 selfcheck`; the judge of experiments v19.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
echo "== A/B public entry, graph ($SECONDS s)"
timeout 240 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s21 --out $OUT/ab_graph 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json" | cut -c1-220
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py tests/mamba3/test_sincos.py 2>&1 | tail -2
echo "== mamba3 bench ($SECONDS s)"
timeout 240 python bench/mamba3_bench.py --out "$OUT" --commit "$commit" --scales 1,2 > "$OUT/mamba3_bench.log" 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" "$OUT/mamba3_bench.log" | grep -E "^c[0-9]|targets|json:" | head -20
echo "== mamba3 selfcheck ($SECONDS s)"
timeout 150 python -m ssmkit.cli mamba3 selfcheck --json "$OUT/mamba3_selfcheck.json" > "$OUT/mamba3_selfcheck.log" 2>&1
echo "rc=$?"; tail -3 "$OUT/mamba3_selfcheck.log"
echo "== mamba3 judge, experiments v19 ($SECONDS s)"
timeout 200 python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v19/solver.py \
  --json "$OUT/mamba3_judge.json" > "$OUT/mamba3_judge.log" 2>&1; echo "rc=$?"; tail -14 "$OUT/mamba3_judge.log"
tar czf "$OUT/logs.tgz" -C "$OUT" $(cd "$OUT" && ls *.log) && rm -f "$OUT"/*.log
echo "== done ($SECONDS s)"
