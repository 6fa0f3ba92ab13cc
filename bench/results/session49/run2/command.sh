#!/usr/bin/env bash
# Session 49 run 2 (device, one call): the addressed prefill graphs as main now has them (prefill_address_graphs
# True by default; their own LRU of _MAX_ADDRESSED_GRAPHS with idle-only replacement; a shape's "kernels" and
# "addressed" graphs on one memory pool, replays ordered by one ReplayStream).
# 1. The fast layer's CUDA tests (the addressed test: shared pool and stream, a call from a side stream).
# 2. `bench/granite_graph_memory.py`: memory the B = 1 prefill graphs hold, switch off and on.
# 3. Same-process A/B, `granite_call_gap.py --toggle off`, one process per length (60 calls, blocks of 10).
# 4. `granite verify` of the default layer.
# 5. `granite bench` of the default layer (one layer through all six workloads, as the judge builds one).
# Predictions: 1 pass; 2 the switch on holds ~3 static outputs more than off (~3 x 25 MiB allocated at 4096,
# ~3 x 100 MiB at 16384) and reserved well below run 1's 804 / 2612 MiB (own pools): ~300-450 / ~1000-1300 MiB;
# 3 on faster by 20-55 us at both lengths (run 1: 409.5 vs 463.5 at 4096; its 16384 A/B had no addressed graph:
# the old shared LRU was full); 4 PASS 117/117; 5 prefill B=1 rows at or below run 1's 0.359 ms at 4096 and
# 20-35 us below run 1's 1.366 ms at 16384 (which had none), varlen and decode as run 1.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s49r2; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session49/run2/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run2.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== granite fast-layer CUDA tests ($SECONDS s)"
timeout $(cap 160) python -m pytest -q -rs -p no:cacheprovider tests/granite/test_fast_layer.py \
  -k "cuda or fast_path" > $W/pytest_fast_layer_cuda.log 2>&1
echo "rc=$?"; grep -E "passed|failed|FAILED|Error|SKIP" $W/pytest_fast_layer_cuda.log | tail -8; pack
echo "== graph memory ($SECONDS s)"
timeout $(cap 80) python bench/granite_graph_memory.py --out $W/graph_memory.json > $W/graph_memory.log 2>&1
echo "rc=$?"; grep -v -i warn $W/graph_memory.log | tail -5; pack
for L in 4096 16384; do
  echo "== addressed prefill A/B, L = $L ($SECONDS s)"
  timeout $(cap 70) python bench/granite_call_gap.py --workloads prefill_b1_l$L --calls 60 \
    --toggle '{"prefill_address_graphs": false}' --out $W/call_gap_l$L.json > $W/call_gap_l$L.log 2>&1
  echo "rc=$?"; grep -v -i warn $W/call_gap_l$L.log | tail -4; pack
done
echo "== granite verify ($SECONDS s)"
timeout $(cap 120) python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py \
  --json $W/granite_verify.json > $W/granite_verify.log 2>&1
echo "rc=$?"; tail -1 $W/granite_verify.log; pack
echo "== granite bench ($SECONDS s)"
timeout $(cap 150) python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py \
  --json $W/granite_bench.json --plot $W/granite_bench.png > $W/granite_bench.log 2>&1
echo "rc=$?"; grep -v -i warn $W/granite_bench.log | tail -10; pack
echo "== done ($SECONDS s)"
