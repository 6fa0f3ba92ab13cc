#!/usr/bin/env bash
# One device call that measures both tracks at the committed defaults and runs both judges; outputs under $OUT.
# Usage (on the GPU machine, repo root): SSMKIT_GIT_COMMIT=<sha> bash bench/final_gpu_run.sh
# Steps (each with its own time limit, so one slow step cannot eat the others): granite judge on the exported
# layer, granite bench (6 workloads, peak memory, plot), granite per-workload profile, mamba3 bench (errors vs
# float64, fwd/bwd/full times at 1x/2x/4x lengths, per-kernel split), mamba3 judge on the exported op.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
step() { echo "== $1 ($SECONDS s)"; }
step "granite judge (exported fast layer)"
python -m ssmkit.cli export granite --out /tmp/granite_candidate.py && chmod 644 /tmp/granite_candidate.py
timeout 200 python -m ssmkit.cli granite judge --candidate /tmp/granite_candidate.py --json "$OUT/granite_judge.json" \
  > "$OUT/granite_judge.log" 2>&1; echo "rc=$?"; tail -12 "$OUT/granite_judge.log"
step "granite bench"
timeout 120 python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py --json "$OUT/granite_bench.json" \
  --plot "$OUT/granite_bench.png" > "$OUT/granite_bench.log" 2>&1; echo "rc=$?"; tail -14 "$OUT/granite_bench.log"
step "granite profile"
timeout 60 python bench/granite_profile.py --calls 20 --out "$OUT/granite_profile.json" > "$OUT/granite_profile.log" 2>&1
echo "rc=$?"; grep -E "^==|GPU sum" "$OUT/granite_profile.log"
step "mamba3 bench (defaults, scales 1,2,4)"
timeout 150 python bench/mamba3_bench.py --out "$OUT/mamba3_bench.json" --commit "$commit" --scales 1,2,4 \
  > "$OUT/mamba3_bench.log" 2>&1; echo "rc=$?"; grep -E "^c[0-9]|targets|json:" "$OUT/mamba3_bench.log" | head -30
step "mamba3 judge (exported fast op)"
python -m ssmkit.cli export mamba3 --out /tmp/mamba3_solver.py && chmod 644 /tmp/mamba3_solver.py
timeout 120 python -m ssmkit.cli mamba3 judge --solver /tmp/mamba3_solver.py --json "$OUT/mamba3_judge.json" \
  > "$OUT/mamba3_judge.log" 2>&1; echo "rc=$?"; tail -14 "$OUT/mamba3_judge.log"
step "done"
