#!/usr/bin/env bash
# Session 25 run 2 (device, one call; bench/_ab carried): the Mamba-3 graph without its copy-out node on the
# critical path: the finish kernel writes its nine gradients at their posted addresses, and the forward's three
# small results are copied out on the low-priority side stream beside the chunk kernels. CUDA graph tests; the
# public entry through its graph against session 24's package (ssmkit_s24 = 154b9f2) at every visible panel, in two
# processes; errors against float64.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
echo "== CUDA tests ($SECONDS s)"
timeout 240 python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py 2>&1 | tail -2
for rep in 1 2; do
  echo "== A/B public entry, graph, process $rep ($SECONDS s)"
  timeout 220 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s24 --out $OUT/ab_graph_$rep 2>&1 \
    | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json" | cut -c1-220
done
echo "== mamba3 bench ($SECONDS s)"
timeout 200 python bench/mamba3_bench.py --out "$OUT" --commit "$commit" --scales 1 > "$OUT/mamba3_bench.log" 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" "$OUT/mamba3_bench.log" | grep -E "^c[0-9]|targets|json:" | head -10
echo "== done ($SECONDS s)"
