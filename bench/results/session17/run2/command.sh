#!/usr/bin/env bash
# Session 17 run 2 (device, one call): variants of the run-1 code (ebcf8a7). Graph A/B of ssmkit_nopf (13f60fa, off
# main: the state-gradient chain without its hand-made prefetch, 224 -> 156 registers per thread, so that a
# chunk-scan program fits beside two chain programs on an SM) and of ssmkit_bp64 (d39f433, off main: the state passing
# with 64 value rows per program, 128 programs of ~30 K registers instead of 512 of 10 K, so that a rotate program
# fits beside one on an SM) against the working tree (= ebcf8a7); backward sweep of
# the side kernels' register cap now that each program's branch is built for its half (168 default, none, 128).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
echo "== mamba3 graph A/B ($SECONDS s)"
timeout 300 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_nopf --package bench/_ab/pkgs/ssmkit_bp64 --out "$OUT" > "$OUT/mamba3_graph_ab.log" 2>&1
echo "rc=$?"; grep -vi "warn" "$OUT/mamba3_graph_ab.log" | grep -E "^c[0-9]|: _" | head -60
echo "== bwd sweep ($SECONDS s)"
timeout 150 python bench/mamba3_config_sweep.py --out "$OUT/bwd" --cases c1_four_mixed,c4_short_and_longest \
  --configs '[{"side_maxnreg": 0}, {"side_maxnreg": 128}]' > "$OUT/bwd_sweep.log" 2>&1; echo "rc=$?"
grep -vi "warn" "$OUT/bwd_sweep.log" | grep -E "^c[0-9]|sides|side_maxnreg|bwd" | head -30
tar czf "$OUT/logs.tgz" -C "$OUT" mamba3_graph_ab.log bwd_sweep.log
echo "== done ($SECONDS s)"
