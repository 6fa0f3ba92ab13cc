#!/usr/bin/env bash
# Session 44 run 2 (device, one call): does the Mamba-3 entry's graph threshold still sit where the graph stops
# paying? `GRAPH_MAX_COPY_BYTES` (ssmkit/mamba3/graph.py) takes the captured graph only up to the size of 3072 tokens
# in 4 sequences, from session 7-8's H200 measurements, when a direct call's GPU work (~0.33 ms per 1000 tokens)
# hid its host launches beyond that size. Run 1 of this session: c1 x2 (T = 4368, direct) full call 1.455 ms wall
# against a kernel sum of 0.859 ms, i.e. host-bound; x4 (T = 8736) 2.144 against 1.732.
# 1. `mamba3_ab.py --graph` (the public entry direct, graph=False, against its graph, graph=True; same process) at
#    scales 1, 2, 4, 8 of c1 / c4 / c5 / c8.
# 2. `mamba3_graph_memory.py`: the direct call's peak memory and one graph's retained memory at the same scales.
# Predictions (H100): the graph's wall at x2 0.80-0.90 ms against the direct 1.40-1.50; x4 1.5-1.7 against 2.1-2.3;
# x8 within 10 % of its queued time, a smaller gain (the direct call GPU-bound there); the same bits on both paths.
# A graph keeps ~0.2 MB per token (~0.4 GB at T = 2184: graph.py's MAX_GRAPHS comment), ~3.5 GB at x8.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s44r2; mkdir -p $W/ab
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session44/run2/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run2.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== direct against graph, scales 1,2,4,8 ($SECONDS s)"
timeout $(cap 330) python bench/mamba3_ab.py --graph --out $W/ab \
  --cases c1_four_mixed,c4_short_and_longest,c5_three_even,c8_small_three --scales 1,2,4,8 > $W/ab/ab.log 2>&1
echo "rc=$?"; grep -E "wall|json" $W/ab/ab.log; pack
echo "== graph memory ($SECONDS s)"
timeout $(cap 150) python bench/mamba3_graph_memory.py --out $W/graph_memory.json \
  --cases c1_four_mixed,c8_small_three --scales 1,2,4,8 > $W/graph_memory.log 2>&1
echo "rc=$?"; tail -10 $W/graph_memory.log; pack
echo "== done ($SECONDS s)"
