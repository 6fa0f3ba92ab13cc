#!/usr/bin/env bash
# Session 23 run 4 (device, one call; bench/_ab carried): the Mamba-3 forward's transposed-operand dots as bf16 dots
# of split operands (Mamba3FwdConfig.transposed_precision "bf16x3": the chunk state's V^T (decay o Ks), the scan's
# scores V; offline sm_90: the chunk state's scalar STS 88 -> 19, the scan's 32 -> 0): direct launches against
# b079332's kernels (bench/_ab/s22), the forward config sweep (tf32 for those dots; the scan's register cap), the
# public entry (graph) against b079332's package at every visible case, CUDA tests, mamba3_bench (errors against
# float64) and selfcheck.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
echo "== A/B direct ($SECONDS s)"
timeout 200 python bench/mamba3_ab.py --baseline bench/_ab/s22 --out $OUT/ab \
  --cases c1_four_mixed,c4_short_and_longest,c8_small_three 2>&1 | grep -v "Warn\|warn(" | tail -14
echo "== forward config sweep ($SECONDS s)"
timeout 150 python bench/mamba3_config_sweep.py --fwd --out $OUT/sweep --cases c1_four_mixed,c4_short_and_longest \
  --configs '[{"transposed_precision": "tf32"}, {"scan_maxnreg": 0}, {"scan_maxnreg": 184}]' 2>&1 \
  | grep -v "Warn\|warn(" | tail -24
echo "== A/B public entry, graph ($SECONDS s)"
timeout 240 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s22 --out $OUT/ab_graph 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json" | cut -c1-220
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py tests/mamba3/test_sincos.py 2>&1 | tail -2
echo "== mamba3 bench ($SECONDS s)"
timeout 240 python bench/mamba3_bench.py --out "$OUT" --commit "$commit" --scales 1 > "$OUT/mamba3_bench.log" 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" "$OUT/mamba3_bench.log" | grep -E "^c[0-9]|targets|worst|json:" | head -24
echo "== mamba3 selfcheck ($SECONDS s)"
timeout 150 python -m ssmkit.cli mamba3 selfcheck --json "$OUT/mamba3_selfcheck.json" > "$OUT/mamba3_selfcheck.log" 2>&1
echo "rc=$?"; tail -3 "$OUT/mamba3_selfcheck.log"
echo "== done ($SECONDS s)"
