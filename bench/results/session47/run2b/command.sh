#!/usr/bin/env bash
# Session 47 run 2b (device, one call; not run: too little device time left to start a machine): run 2 cut to what the last ~4 minutes of device time allow, after thirteen
# calls without a machine: the addressed path's CUDA tests (with the prefill fast path's and the prefill graphs'),
# then the same-process A/B of prefill_address_graphs at the two B = 1 prefills (granite_call_gap.py --toggle).
# Predictions as run 2's: the tests pass; the switch on faster by 20-35 us at both lengths.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s47r2b; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session47/run2b/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run2b.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== CUDA tests ($SECONDS s)"
timeout $(cap 110) python -m pytest -q -p no:cacheprovider tests/granite/test_fast_layer.py \
  -k "addressed_prefill_cuda or prefill_fast_path_cuda or prefill_cuda_graph" > $W/pytest.log 2>&1
echo "rc=$?"; grep -E "passed|failed|FAILED|Error" $W/pytest.log | tail -5; pack
echo "== addressed prefill A/B ($SECONDS s)"
timeout $(cap 120) python bench/granite_call_gap.py --workloads prefill_b1_l4096,prefill_b1_l16384 --calls 30 \
  --set '{"prefill_address_graphs": true}' --toggle '{"prefill_address_graphs": false}' \
  --out $W/call_gap_addressed.json > $W/call_gap.log 2>&1
echo "rc=$?"; grep -v -i warn $W/call_gap.log | tail -8; pack
echo "== done ($SECONDS s)"
