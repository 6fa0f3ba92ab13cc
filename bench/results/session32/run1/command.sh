#!/usr/bin/env bash
# Session 32 run 1 (device, one call, the H200 kind asked for): main's code (f9468bb: session 31's fast path with its
# review mend and final mend, never run on a GPU). Steps: the Mamba-3 graph CUDA tests (session 31's run 6: the mends;
# the default path's replays through the fast path), `granite verify`, `granite bench`, `mamba3_wall_split.py`,
# `mamba3_bench` (scales 1). Outputs packed after every step.
# Predictions: graph tests pass; verify PASS 117/117; on an H200 the Granite bench within session 22's ranges
# (prefill 0.37-0.40 / 1.24-1.30 / 1.18-1.19 ms, decode 0.050-0.051 / 0.057 / 0.099-0.106); mamba3 errors as in
# session 31 run 1 (dq/dk 2.34e-3, dv 1.74e-3); wall split span - queued 0.03-0.04 ms (the mend's device compare +1-2
# us); c1 full call queued ~0.41 ms and wall ~0.46 on an H200 (on an H100: queued ~0.46, wall ~0.49-0.54).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
W=/tmp/s32r1; mkdir -p $W/mamba3
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "$commit" > $W/commit.txt
pack() { tar czf "$OUT/run1.tgz" -C $W .; }
echo "== mamba3 graph CUDA tests ($SECONDS s)"
timeout 80 python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py > $W/pytest_graph_cuda.log 2>&1
echo "rc=$?"; grep -E "passed|failed|FAILED" $W/pytest_graph_cuda.log | tail -3; pack
echo "== granite verify ($SECONDS s)"
timeout 130 python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py --json $W/granite_verify.json \
  > $W/granite_verify.log 2>&1; echo "rc=$?"; tail -1 $W/granite_verify.log; pack
echo "== granite bench ($SECONDS s)"
timeout 130 python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py --json $W/granite_bench.json \
  --plot $W/granite_bench.png > $W/granite_bench.log 2>&1; echo "rc=$?"; grep -v -i warn $W/granite_bench.log | tail -12
pack
echo "== mamba3 wall split ($SECONDS s)"
timeout 90 python bench/mamba3_wall_split.py --out $W/mamba3 2>&1 | grep -v "Warn\|warn(" | tail -8; pack
echo "== mamba3 bench ($SECONDS s)"
left=$((570 - SECONDS)); [ $left -gt 60 ] || left=60
timeout $left python bench/mamba3_bench.py --out $W/mamba3 --commit "$commit" --scales 1 > $W/mamba3/mamba3_bench.log 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" $W/mamba3/mamba3_bench.log | grep -E "^c[0-9]|targets|json:" | grep -v deterministic \
  | sort -u | head -12; pack
echo "== done ($SECONDS s)"
