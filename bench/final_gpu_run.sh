#!/usr/bin/env bash
# One device call that measures the committed defaults and runs the judge; outputs under $OUT.
# Usage (on the GPU machine, repo root): SSMKIT_GIT_COMMIT=<sha> [GRANITE=0] [LAYER=1] [MAMBA3=1] bash bench/final_gpu_run.sh
# Granite steps (each with its own time limit, so one slow step cannot eat the others): the CUDA tests of the
# fast layer and the Granite kernels; `granite verify` of the fast layer; the judge on the exported layer;
# `granite bench` (6 workloads, peak memory, plot); the per-workload profile. LAYER=1 adds the layer bench of
# session 3's switch pairs (prefill "kernels" vs "mapped" graphs, decode "copy" vs "mapped" I/O). MAMBA3=1 adds
# the Mamba-3 bench (errors vs float64, fwd/bwd/full at 1x/2x/4x lengths), selfcheck and judge; GRANITE=0 skips
# the Granite steps (the two halves fit one device call each).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
step() { echo "== $1 ($SECONDS s)"; }
if [ "${GRANITE:-1}" = 1 ]; then
step "CUDA tests (fast layer, Granite kernels)"
timeout 150 python -m pytest -q tests/granite/test_fast_layer.py tests/kernels/granite > "$OUT/pytest_cuda.log" 2>&1
echo "rc=$?"; tail -2 "$OUT/pytest_cuda.log"
step "granite verify (fast layer)"
timeout 120 python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py --json "$OUT/granite_verify.json" \
  > "$OUT/granite_verify.log" 2>&1; echo "rc=$?"; tail -1 "$OUT/granite_verify.log"
step "granite judge (exported fast layer)"
python -m ssmkit.cli export granite --out /tmp/granite_candidate.py && chmod 644 /tmp/granite_candidate.py
timeout 270 python -m ssmkit.cli granite judge --candidate /tmp/granite_candidate.py --json "$OUT/granite_judge.json" \
  > "$OUT/granite_judge.log" 2>&1; echo "rc=$?"; tail -12 "$OUT/granite_judge.log"
if [ "${LAYER:-0}" = 1 ]; then
  step "granite layer bench: session-3 switches"
  timeout 150 python bench/granite_layer_bench.py --commit "$commit" --out "$OUT/granite_layer_s3.json" \
    --variants graphs_kernels_packed_cb_spread,graphs_mapped_packed_cb_spread,decode_fast_evict,decode_mapped \
    > "$OUT/granite_layer_s3.log" 2>&1; echo "rc=$?"; grep -A9 "^ms per call" "$OUT/granite_layer_s3.log"
fi
step "granite bench (defaults)"
timeout 100 python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py --json "$OUT/granite_bench.json" \
  --plot "$OUT/granite_bench.png" > "$OUT/granite_bench.log" 2>&1; echo "rc=$?"; tail -14 "$OUT/granite_bench.log"
step "granite profile"
timeout 50 python bench/granite_profile.py --calls 20 --out "$OUT/granite_profile.json" > "$OUT/granite_profile.log" 2>&1
echo "rc=$?"; grep -E "^==|GPU sum" "$OUT/granite_profile.log"
fi
if [ "${MAMBA3:-0}" = 1 ]; then
  step "mamba3 bench (defaults, scales 1,2,4)"
  timeout 150 python bench/mamba3_bench.py --out "$OUT" --commit "$commit" --scales 1,2,4 \
    > "$OUT/mamba3_bench.log" 2>&1; echo "rc=$?"; grep -E "^c[0-9]|targets|json:" "$OUT/mamba3_bench.log" | head -30
  step "mamba3 selfcheck (fast op)"
  timeout 120 python -m ssmkit.cli mamba3 selfcheck --json "$OUT/mamba3_selfcheck.json" > "$OUT/mamba3_selfcheck.log" 2>&1
  echo "rc=$?"; tail -14 "$OUT/mamba3_selfcheck.log"
  step "mamba3 judge (exported fast op)"
  python -m ssmkit.cli export mamba3 --out /tmp/mamba3_solver.py && chmod 644 /tmp/mamba3_solver.py
  timeout 120 python -m ssmkit.cli mamba3 judge --solver /tmp/mamba3_solver.py --json "$OUT/mamba3_judge.json" \
    > "$OUT/mamba3_judge.log" 2>&1; echo "rc=$?"; tail -14 "$OUT/mamba3_judge.log"
fi
# the device returns at most 8 files: the logs travel as one archive (the JSON results and the plot stay files)
tar -C "$OUT" -czf "$OUT/logs.tgz" $(cd "$OUT" && ls *.log) && rm -f "$OUT"/*.log
step "done"
