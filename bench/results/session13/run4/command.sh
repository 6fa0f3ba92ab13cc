#!/usr/bin/env bash
# Session 13 run 4 (device, one call): final measurement of the session's code. Mamba-3: bench (fwd-only, bwd-only,
# full call at 1x / 2x / 4x lengths, errors vs float64, GPU time from the profiler) and the graph A/B (queued GPU
# time per call); Granite: bench (its code is session 12's).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
echo "== mamba3 bench ($SECONDS s)"
timeout 200 python bench/mamba3_bench.py --out "$OUT" --commit "$commit" --scales 1,2,4 > "$OUT/mamba3_bench.log" 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" "$OUT/mamba3_bench.log" | grep -E "^c[0-9]|targets|json:|worst|error" | head -40
echo "== mamba3 graph A/B ($SECONDS s)"
timeout 150 python bench/mamba3_ab.py --graph --out "$OUT" > "$OUT/mamba3_graph_ab.log" 2>&1
echo "rc=$?"; grep -E "^c[0-9]|json" "$OUT/mamba3_graph_ab.log"
echo "== granite bench ($SECONDS s)"
timeout 100 python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py --json "$OUT/granite_bench.json" \
  > "$OUT/granite_bench.log" 2>&1; echo "rc=$?"; tail -10 "$OUT/granite_bench.log"
tar czf "$OUT/logs.tgz" -C "$OUT" mamba3_bench.log mamba3_graph_ab.log granite_bench.log
echo "== done ($SECONDS s)"
