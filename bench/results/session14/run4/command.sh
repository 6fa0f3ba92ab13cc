#!/usr/bin/env bash
# Session 14 run 4 (device, one call): final measurement of the session's code. Mamba-3: judge of experiments v11
# (exported at this commit), bench (fwd-only, bwd-only, full call at 1x / 2x / 4x lengths, errors vs float64),
# selfcheck; Granite: bench (its code is session 12's).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
echo "== mamba3 judge, experiments v11 ($SECONDS s)"
timeout 150 python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v11/solver.py \
  --json "$OUT/mamba3_judge.json" > "$OUT/mamba3_judge.log" 2>&1; echo "rc=$?"; tail -12 "$OUT/mamba3_judge.log"
echo "== mamba3 bench ($SECONDS s)"
timeout 200 python bench/mamba3_bench.py --out "$OUT" --commit "$commit" --scales 1,2,4 > "$OUT/mamba3_bench.log" 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" "$OUT/mamba3_bench.log" | grep -E "^c[0-9]|targets|json:|worst|error" | head -40
echo "== mamba3 selfcheck ($SECONDS s)"
timeout 100 python -m ssmkit.cli mamba3 selfcheck --json "$OUT/mamba3_selfcheck.json" > "$OUT/mamba3_selfcheck.log" 2>&1
echo "rc=$?"; tail -6 "$OUT/mamba3_selfcheck.log"
echo "== granite bench ($SECONDS s)"
timeout 100 python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py --json "$OUT/granite_bench.json" \
  > "$OUT/granite_bench.log" 2>&1; echo "rc=$?"; tail -10 "$OUT/granite_bench.log"
tar czf "$OUT/logs.tgz" -C "$OUT" mamba3_judge.log mamba3_bench.log mamba3_selfcheck.log granite_bench.log
echo "== done ($SECONDS s)"
