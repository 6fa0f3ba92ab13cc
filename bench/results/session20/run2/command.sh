#!/usr/bin/env bash
# Session 20 run 2: under the side kernel's 168 cap, two placements that shorten live ranges (offline, same
# operations): the q side's dl store before its second dot (rotated half 50 -> 8 spill instructions), the k side's
# rotated half reloading q~ after its dot (121 -> 82; sides 8016 -> 7768 SASS over the four branches).
# Same-process A/B, direct launches, against run 1's code (bench/_ab/s20_r1 = 55739a0's kernels) and the session's
# start (bench/_ab/s20_head = abc6c5b's); the public entry (graph) against abc6c5b's package (ssmkit_s19), every
# visible case; bench (errors against float64 at scale 1).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
echo "== A/B direct ($SECONDS s)"
timeout 200 python bench/mamba3_ab.py --baseline bench/_ab/s20_head --baseline bench/_ab/s20_r1 --out $OUT/ab \
  --cases c1_four_mixed,c4_short_and_longest 2>&1 | grep -v "Warn\|warn(" | tail -30
echo "== A/B public entry, graph ($SECONDS s)"
timeout 240 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s19 --out $OUT/ab_graph 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json" | cut -c1-200
echo "== mamba3 bench ($SECONDS s)"
timeout 220 python bench/mamba3_bench.py --out "$OUT" --commit "$commit" --scales 1 > "$OUT/mamba3_bench.log" 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" "$OUT/mamba3_bench.log" | grep -E "^c[0-9]|targets|json:|worst|error" | head -40
echo "== done ($SECONDS s)"
