#!/usr/bin/env bash
# One device call that measures both tracks and runs the judge on the GPU; outputs under $OUT (or out/).
# Usage (on the GPU machine, repo root): SSMKIT_GIT_COMMIT=<sha> bash bench/final_gpu_run.sh
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
step() { echo "== $1 ($SECONDS s)"; }
step "mamba3 bench (errors vs float64, fwd/bwd/full times, config sweep)"
timeout 200 python bench/mamba3_bench.py --out "$OUT/mamba3_bench.json" --commit "$commit" --sweep --scales 1,2,4 \
  > "$OUT/mamba3_bench.log" 2>&1; echo "rc=$?"; grep -E "^c[0-9]|targets|json:|best|fastest" "$OUT/mamba3_bench.log" | head -40
step "granite judge (exported fast layer)"
python -m ssmkit.cli export granite --out /tmp/granite_candidate.py && chmod 644 /tmp/granite_candidate.py
timeout 150 python -m ssmkit.cli granite judge --candidate /tmp/granite_candidate.py --json "$OUT/granite_judge.json" \
  > "$OUT/granite_judge.log" 2>&1; echo "rc=$?"; tail -12 "$OUT/granite_judge.log"
step "mamba3 judge (exported fast op)"
python -m ssmkit.cli export mamba3 --out /tmp/mamba3_solver.py && chmod 644 /tmp/mamba3_solver.py
timeout 120 python -m ssmkit.cli mamba3 judge --solver /tmp/mamba3_solver.py --json "$OUT/mamba3_judge.json" \
  > "$OUT/mamba3_judge.log" 2>&1; echo "rc=$?"; tail -14 "$OUT/mamba3_judge.log"
step "done"
