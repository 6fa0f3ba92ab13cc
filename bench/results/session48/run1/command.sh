#!/usr/bin/env bash
# Session 48 run 1 (device, one call; not run: no machine came, then device loans were paused): session 47's run 2,
# written so that it needs no change of the layer's default. prefill_address_graphs (off by default): an unmasked
# prefill without a cache at an input address seen before replays a graph with in_proj inside, read at that address.
# Steps 3 and 5 run a candidate written here, the layer with the switch on ($W/granite_fast_addressed.py).
# 1. The fast layer's CUDA tests (test_addressed_prefill_cuda among them: it sets the switch itself; a new tensor
#    at a used address, the weakref showing no reference kept).
# 2. Same-process A/B, `granite_call_gap.py --set on --toggle off` at the two B = 1 prefills (60 calls, alternating
#    blocks of 10; the harness's 3 rotating inputs: 3 addressed graphs).
# 3. `granite verify` of the switch-on candidate.
# 4. `bench/granite_graph_memory.py`: allocated / reserved memory the prefill graphs hold, switch off and on.
# 5. `granite bench` of the switch-on candidate (16 pairs, all six workloads, peak memory).
# Predictions: 1 pass; 2 on-side faster by 20-35 us at both lengths (session 47 run 1's prototype: -27.6 / -28.0
# us on an H100); 3 PASS 117/117 (the same kernels and bits); 4 the switch on holds 3 graphs more: reserved memory up
# by ~3x one graph's pool (~0.2-0.4 GB at 4096, ~0.8-1.5 GB at 16384); 5 prefill B=1 rows 20-35 us below session
# 44's H100 bench (0.418 / 1.338 ms) or, on an H200, below session 45's (0.393 / 1.199); the varlen and decode rows
# as before; peak memory as before (bench measures it on one call, before an address's second sighting).
# If 1-3 hold, flip the default in layer.py (and its docstrings) and export and judge it (run 2).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s48r1; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session48/run1/command.sh" > $W/command.txt
cat > $W/granite_fast_addressed.py <<'PY'
"""Granite candidate: FastMambaLayer with prefill_address_graphs on (session 48 run 1)."""
from ssmkit.granite.layer import FastMambaLayer


class CandidateBlock(FastMambaLayer):
    def __init__(self, config, layer_idx: int = 0) -> None:
        super().__init__(config, layer_idx)
        self.prefill_address_graphs = True
PY
pack() { tar czf "$OUT/run1.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== granite fast-layer CUDA tests ($SECONDS s)"
timeout $(cap 160) python -m pytest -q -p no:cacheprovider tests/granite/test_fast_layer.py -k "cuda or fast_path" \
  > $W/pytest_fast_layer_cuda.log 2>&1
echo "rc=$?"; grep -E "passed|failed|FAILED|Error" $W/pytest_fast_layer_cuda.log | tail -5; pack
echo "== addressed prefill A/B ($SECONDS s)"
timeout $(cap 100) python bench/granite_call_gap.py --workloads prefill_b1_l4096,prefill_b1_l16384 --calls 60 \
  --set '{"prefill_address_graphs": true}' --toggle '{"prefill_address_graphs": false}' \
  --out $W/call_gap_addressed.json > $W/call_gap.log 2>&1
echo "rc=$?"; grep -v -i warn $W/call_gap.log | tail -8; pack
echo "== granite verify ($SECONDS s)"
timeout $(cap 120) python -m ssmkit.cli granite verify --candidate $W/granite_fast_addressed.py \
  --json $W/granite_verify.json > $W/granite_verify.log 2>&1; echo "rc=$?"; tail -1 $W/granite_verify.log; pack
echo "== graph memory ($SECONDS s)"
timeout $(cap 80) python bench/granite_graph_memory.py --out $W/graph_memory.json > $W/graph_memory.log 2>&1
echo "rc=$?"; grep -v -i warn $W/graph_memory.log | tail -5; pack
echo "== granite bench ($SECONDS s)"
timeout $(cap 170) python -m ssmkit.cli granite bench --candidate $W/granite_fast_addressed.py \
  --json $W/granite_bench.json --plot $W/granite_bench.png > $W/granite_bench.log 2>&1
echo "rc=$?"; grep -v -i warn $W/granite_bench.log | tail -12; pack
echo "== done ($SECONDS s)"
