#!/usr/bin/env bash
# Session 30 run 2 (device, one call): main's code on the GPU after sessions 23-29 changed shared pieces
# (capture_graph's stream priority in kernels/common/mapped_io.py, the Mamba-3 graph) and no Granite GPU run since
# session 22: the Granite CUDA tests (fast layer, Granite kernels, MappedIO), `granite verify`, `granite bench` (16
# pairs, the plot), then `mamba3_bench` (on an H200: the first of main's final Mamba-3 code there; session 27's run 2
# measured it uncapped). Outputs are packed after every step. Predictions: tests pass, verify PASS 117/117, bench
# within session 22's ranges (no Granite kernel changed: prefill 0.37-0.40 / 1.24-1.30 / 1.18-1.19 ms, decode
# 0.050-0.051 / 0.057 / 0.099-0.106 on an H200), mamba3 errors as in session 30 run 1, c1 full call wall ~0.50 ms on an H200.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
W=/tmp/s30r2; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
pack() { tar czf "$OUT/run2.tgz" -C $W .; }
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -p no:warnings -p no:cacheprovider tests/granite/test_fast_layer.py tests/kernels/granite \
  tests/kernels/common > $W/pytest_cuda.log 2>&1; echo "rc=$?"; tail -1 $W/pytest_cuda.log
grep -E "FAILED|Error" $W/pytest_cuda.log | head -8; pack
echo "== granite verify ($SECONDS s)"
timeout 150 python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py --json $W/granite_verify.json \
  > $W/granite_verify.log 2>&1; echo "rc=$?"; tail -1 $W/granite_verify.log; pack
echo "== granite bench ($SECONDS s)"
timeout 150 python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py --json $W/granite_bench.json \
  --plot $W/granite_bench.png > $W/granite_bench.log 2>&1; echo "rc=$?"; grep -v -i warn $W/granite_bench.log | tail -12
pack
echo "== mamba3 bench ($SECONDS s)"
mkdir -p $W/mamba3
timeout 80 python bench/mamba3_bench.py --out $W/mamba3 --commit "$commit" --scales 1 > $W/mamba3/mamba3_bench.log 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" $W/mamba3/mamba3_bench.log | grep -E "^c[0-9]|targets|json:" | grep -v deterministic \
  | sort -u | head -12; pack
echo "== done ($SECONDS s)"
