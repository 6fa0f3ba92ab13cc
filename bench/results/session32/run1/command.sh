#!/usr/bin/env bash
# Session 32 run 1 (device, one call; not run in session 32: no device was lent after the first failed start).
# Granite, main's code with session 32's prefill fast path (`prefill_fast_path`, CPU-tested only). Steps, the deciding
# ones first, outputs packed after each:
# 1. the Granite fast layer's CUDA tests (graphs, both fast paths: the new prefill one and the weight-check mend);
# 2. the prefill fast path's same-process A/B (`granite_call_gap.py --toggle '{"prefill_fast_path": false}'`, the
#    B = 1 prefills; host marks show where the call reaches in_proj);
# 3. `granite_gemm_launches.py`: which kernels each form of the projection GEMMs launches (is in_proj's memset, 8-14
#    us before its GEMM, avoidable);
# 4. `granite verify`; 5. `granite bench` (16 pairs, the plot).
# Predictions: tests pass; the fast path -6 to -12 us per call at L = 4096 and 16384, in_proj reached ~10 us sooner;
# a memset before the GEMM in some forms only (if in none: cuBLAS's own choice); verify PASS 117/117; on an H200 the
# bench within session 22's ranges (prefill 0.37-0.40 / 1.24-1.30 / 1.18-1.19 ms, decode 0.050-0.051 / 0.057 /
# 0.099-0.106) less the fast path's gain at B = 1 (on an H100: session 31's 0.392 / 1.312 / 1.235, 0.044 / 0.062 /
# 0.119 less that gain).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s32r1; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
pack() { tar czf "$OUT/run1.tgz" -C $W .; }
echo "== granite fast-layer CUDA tests ($SECONDS s)"
timeout 150 python -m pytest -q -p no:cacheprovider tests/granite/test_fast_layer.py -k "cuda or fast_path" \
  > $W/pytest_fast_layer_cuda.log 2>&1
echo "rc=$?"; grep -E "passed|failed|FAILED" $W/pytest_fast_layer_cuda.log | tail -3; pack
echo "== prefill fast path A/B ($SECONDS s)"
timeout 100 python bench/granite_call_gap.py --workloads prefill_b1_l4096,prefill_b1_l16384 --calls 60 \
  --toggle '{"prefill_fast_path": false}' --out $W/call_gap_prefill_fast_path.json 2>&1 | grep -v -i warn | tail -8
pack
echo "== projection GEMM launches ($SECONDS s)"
timeout 90 python bench/granite_gemm_launches.py --calls 30 --out $W/gemm_launches.json 2>&1 | grep -v -i warn | tail -34
pack
echo "== granite verify ($SECONDS s)"
timeout 120 python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py --json $W/granite_verify.json \
  > $W/granite_verify.log 2>&1; echo "rc=$?"; tail -1 $W/granite_verify.log; pack
echo "== granite bench ($SECONDS s)"
left=$((585 - SECONDS)); [ $left -gt 60 ] || left=60
timeout $left python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py --json $W/granite_bench.json \
  --plot $W/granite_bench.png > $W/granite_bench.log 2>&1; echo "rc=$?"; grep -v -i warn $W/granite_bench.log | tail -12
pack
echo "== done ($SECONDS s)"
