#!/usr/bin/env bash
# One device call that measures the committed defaults and runs the judge; outputs under $OUT.
# Usage (on the GPU machine, repo root): SSMKIT_GIT_COMMIT=<sha> [MAMBA3=1] bash bench/final_gpu_run.sh
# Granite steps (each with its own time limit, so one slow step cannot eat the others): judge on the exported
# layer; layer bench of the session's switch pairs (packed vs per-row projections for left padding, decode fast
# path and evict-first hint vs session 1) with a profile of the varlen workload; `granite bench` (6 workloads,
# peak memory, plot); the per-workload profile. MAMBA3=1 adds the Mamba-3 bench (errors vs float64, fwd/bwd/full
# at 1x/2x/4x lengths) and judge (skipped in session 2: the Mamba-3 code equals the judged v1).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
step() { echo "== $1 ($SECONDS s)"; }
step "granite judge (exported fast layer)"
python -m ssmkit.cli export granite --out /tmp/granite_candidate.py && chmod 644 /tmp/granite_candidate.py
timeout 270 python -m ssmkit.cli granite judge --candidate /tmp/granite_candidate.py --json "$OUT/granite_judge.json" \
  > "$OUT/granite_judge.log" 2>&1; echo "rc=$?"; tail -12 "$OUT/granite_judge.log"
step "granite layer bench: session-2 switches"
timeout 110 python bench/granite_layer_bench.py --commit "$commit" --out "$OUT/granite_layer_s2.json" \
  --variants baseline,graphs_kernels_pack_cb_spread,graphs_kernels_packed_cb_spread,decode_fast_path,decode_fast_evict \
  --profile prefill_varlen_b8 > "$OUT/granite_layer_s2.log" 2>&1; echo "rc=$?"; grep -A12 "^ms per call" "$OUT/granite_layer_s2.log"
step "granite bench (defaults)"
timeout 100 python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py --json "$OUT/granite_bench.json" \
  --plot "$OUT/granite_bench.png" > "$OUT/granite_bench.log" 2>&1; echo "rc=$?"; tail -14 "$OUT/granite_bench.log"
step "granite profile"
timeout 50 python bench/granite_profile.py --calls 20 --out "$OUT/granite_profile.json" > "$OUT/granite_profile.log" 2>&1
echo "rc=$?"; grep -E "^==|GPU sum" "$OUT/granite_profile.log"
if [ "${MAMBA3:-0}" = 1 ]; then
  step "mamba3 bench (defaults, scales 1,2,4)"
  timeout 150 python bench/mamba3_bench.py --out "$OUT" --commit "$commit" --scales 1,2,4 \
    > "$OUT/mamba3_bench.log" 2>&1; echo "rc=$?"; grep -E "^c[0-9]|targets|json:" "$OUT/mamba3_bench.log" | head -30
  step "mamba3 judge (exported fast op)"
  python -m ssmkit.cli export mamba3 --out /tmp/mamba3_solver.py && chmod 644 /tmp/mamba3_solver.py
  timeout 120 python -m ssmkit.cli mamba3 judge --solver /tmp/mamba3_solver.py --json "$OUT/mamba3_judge.json" \
    > "$OUT/mamba3_judge.log" 2>&1; echo "rc=$?"; tail -14 "$OUT/mamba3_judge.log"
fi
step "done"
