#!/usr/bin/env bash
# Session 44 run 5 (device, one call; carry ["bench/_ab"]: ssmkit_s44g = 824df97, main with the graph bound at 20480
# tokens, by `python bench/ab_package.py --commit 824df97 --name ssmkit_s44g`): the forward's angle carry in its own
# kernel (`_mamba3_fwd_angle_carry_kernel`, grid (S, H), O(chunks) per sequence) instead of walked by the rotate
# kernel (quadratic, so only up to 3072 tokens; beyond that the rotate kernel read the passing's carry and ran after
# the passing). Now the carry and rotate kernels run beside the passing at every length.
# 1. the graph CUDA tests (the side-stream test now also at 5120 + 700 tokens);
# 2. `mamba3_ab.py --package` (824df97 against the tree, both through their graphs, same process) at scales
#    1, 2, 4, 8 of c1 / c4 / c5 / c8;
# 3. `mamba3_long_fwd.py` at 8192 / 32768 / 131072 tokens in one sequence (the carry kernel's time as a sequence's
#    chunk count grows; the rotate kernel there 0.155 / 0.70 / 2.76 ms reading the carry, H200, session 14).
# Predictions (H100): 1. pass; 2. every result bit-identical; x1 level (+-3 us: the carry launch before the rotate
# kernel on the side stream against the walk it replaces, ~3 us at the visible panels); x2 -30 to -50 us queued
# (the rotate kernel, ~58 us at c1 x2, beside the passing's ~56 instead of after it), x4 -60 to -100, x8 -120 to
# -200; 3. the carry kernel a few us at 8192 (128 chunk steps), growing linearly (~2 chunk steps per us).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s44r5; mkdir -p $W/ab $W/long
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session44/run5/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run5.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== graph CUDA tests ($SECONDS s)"
timeout $(cap 150) python -m pytest -q tests/mamba3/test_graph_cuda.py > $W/tests.txt 2>&1; echo "rc=$?"; tail -2 $W/tests.txt
pack
echo "== A/B 824df97 -> tree, scales 1,2,4,8 ($SECONDS s)"
timeout $(cap 330) python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s44g --out $W/ab \
  --cases c1_four_mixed,c4_short_and_longest,c5_three_even,c8_small_three --scales 1,2,4,8 > $W/ab/ab.log 2>&1
echo "rc=$?"; grep -E "wall|json" $W/ab/ab.log; pack
echo "== long single sequences, forward kernels ($SECONDS s)"
timeout $(cap 90) python bench/mamba3_long_fwd.py --out $W/long --lengths 8192,32768,131072 > $W/long/long.log 2>&1
echo "rc=$?"; grep "^T=" $W/long/long.log | cut -c1-200; pack
echo "== done ($SECONDS s)"
