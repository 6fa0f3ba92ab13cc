#!/usr/bin/env bash
# Session 33 run A (device, one call): the code on main that no GPU has run yet, correctness first, then figures.
# Session 32's three prepared calls never ran (no device lent); this one takes the steps of its runs 1 and 2 that
# check main's default paths, so one call gives them even if no other comes:
# 1. the Granite fast layer's CUDA tests (session 32's prefill fast path, default on; the weight-check mend);
# 2. the Mamba-3 graph CUDA tests (session 31's mends of the entry's fast path);
# 3. `granite bench` (16 pairs, the plot);
# 4. `mamba3_wall_split.py` (c1 / c5 / c8: wall, span, queued GPU ms of the public call);
# 5. the prefill fast path's same-process A/B (`granite_call_gap.py --toggle '{"prefill_fast_path": false}'`);
# 6. `granite verify`.
# Each step gets what is left of $BUDGET s (default 585) at most; outputs are packed after each.
# Predictions: tests pass; on an H200 the bench within session 22's ranges (prefill 0.37-0.40 / 1.24-1.30 /
# 1.18-1.19 ms, decode 0.050-0.051 / 0.057 / 0.099-0.106) less the fast path's gain at B = 1 (on an H100: session 31's
# 0.392 / 1.312 / 1.235, 0.044 / 0.062 / 0.119 less that gain); the Mamba-3 wall at c1 ~0.46-0.47 ms and queued
# ~0.42 on an H200 (session 27: ~0.49 / ~0.42 before session 31's fast path, -19 to -26 us wall on an H100); the
# A/B -6 to -12 us per call at L = 4096 and 16384; verify PASS 117/117.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s33rA; mkdir -p $W/mamba3
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
pack() { tar czf "$OUT/runA.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== granite fast-layer CUDA tests ($SECONDS s)"
timeout $(cap 150) python -m pytest -q -p no:cacheprovider tests/granite/test_fast_layer.py -k "cuda or fast_path" \
  > $W/pytest_fast_layer_cuda.log 2>&1
echo "rc=$?"; grep -E "passed|failed|FAILED" $W/pytest_fast_layer_cuda.log | tail -3; pack
echo "== mamba3 graph CUDA tests ($SECONDS s)"
timeout $(cap 80) python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py > $W/pytest_graph_cuda.log 2>&1
echo "rc=$?"; grep -E "passed|failed|FAILED" $W/pytest_graph_cuda.log | tail -3; pack
echo "== granite bench ($SECONDS s)"
timeout $(cap 150) python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py \
  --json $W/granite_bench.json --plot $W/granite_bench.png > $W/granite_bench.log 2>&1
echo "rc=$?"; grep -v -i warn $W/granite_bench.log | tail -12; pack
echo "== mamba3 wall split ($SECONDS s)"
timeout $(cap 80) python bench/mamba3_wall_split.py --out $W/mamba3 2>&1 | grep -v "Warn\|warn(" | tail -8; pack
echo "== prefill fast path A/B ($SECONDS s)"
timeout $(cap 100) python bench/granite_call_gap.py --workloads prefill_b1_l4096,prefill_b1_l16384 --calls 60 \
  --toggle '{"prefill_fast_path": false}' --out $W/call_gap_prefill_fast_path.json 2>&1 | grep -v -i warn | tail -8
pack
echo "== granite verify ($SECONDS s)"
timeout $(cap 120) python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py \
  --json $W/granite_verify.json > $W/granite_verify.log 2>&1; echo "rc=$?"; tail -1 $W/granite_verify.log; pack
echo "== done ($SECONDS s)"
