#!/usr/bin/env bash
# Session 44 run 4 (device, one call): where the graphed Mamba-3 call's wall goes beyond its queued GPU time as the
# sequences grow. Run 3: wall - queued 0.03 ms at c1 (T = 2184), 0.07 at x2, 0.24 at x4 (c8: 0.05 / 0.04 / 0.09).
# `bench/mamba3_wall_split.py` at scales 1, 2, 4, 8 of c1 and c8: queued, span (one call on an idle GPU, CUDA
# events), wall, and the host's pre / replay / post pieces.
# Prediction: the gap is on the GPU side (span - queued grows with T: a lone call runs longer than the per-call time
# of calls back to back), not in the host pieces (pre / replay / post level across scales, ~0.03-0.06 ms together).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s44r4; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session44/run4/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run4.tgz" -C $W .; }
echo "== wall split, scales 1,2,4,8 ($SECONDS s)"
timeout 400 python bench/mamba3_wall_split.py --out $W --cases c1_four_mixed,c8_small_three --scales 1,2,4,8 \
  > $W/wall_split.log 2>&1
echo "rc=$?"; grep -v -i warn $W/wall_split.log | tail -14; pack
echo "== done ($SECONDS s)"
