#!/usr/bin/env bash
# Session 25 run 4 (device, one call; bench/_ab carried): the side kernel's per-head dq / dk rows stored in bf16
# (Mamba3BwdConfig.head_partials "bf16") against fp32 (the previous commit: kernels bench/_ab/s25b, package
# ssmkit_s25b): direct launches (per-kernel split, difference of the 16 results), the public entry through its graph
# at every visible panel, errors against float64 (mamba3_bench); then run 3's command: `mamba3 selfcheck` (of this
# commit's code, bf16 rows) and the judge of experiments v23 (the previous commit's code, fp32 rows, exported).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
echo "== A/B direct launches, kernels ($SECONDS s)"
timeout 200 python bench/mamba3_ab.py --baseline bench/_ab/s25b --cases c1_four_mixed,c4_short_and_longest \
  --out $OUT/ab_direct 2>&1 | grep -v "Warn\|warn(" | grep -v "_warn_once" | cut -c1-300
echo "== A/B public entry, graph ($SECONDS s)"
timeout 220 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s25b --out $OUT/ab_graph 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json" | cut -c1-220
echo "== mamba3 bench ($SECONDS s)"
timeout 200 python bench/mamba3_bench.py --out "$OUT" --commit "$commit" --scales 1 > "$OUT/mamba3_bench.log" 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" "$OUT/mamba3_bench.log" | grep -E "^c[0-9]|targets|json:" | head -20
echo "== run 3: selfcheck and judge of v23 ($SECONDS s)"
OUT=$OUT/run3 bash bench/results/session25/run3/command.sh
echo "== done ($SECONDS s)"
