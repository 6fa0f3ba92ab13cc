#!/usr/bin/env bash
# Session 46 run 4 (device, one call): where the bench's wall gap at 4x comes from.
# Run 3 (H100, `mamba3_bench.py --scales 4` in a fresh process) gave wall - queued 0.22-0.27 ms at every T ~ 8600-9700
# case, while run 2's `mamba3_wall_gap.py` (same card kind) gave 0.03 at 4x in all three phases. The script now also
# times the entry the bench's way after each split (`wall_ms`: wall_ms_entry as the split calls it, wall_ms_configs with
# the configs passed as the bench's `full` stage does; wall_ms_stage = the bench's own full-stage wall in bench_state).
# Phases: fresh, bench_capture (graphs dropped first, so the graph is captured inside the stage loop as in the
# bench), bench_state, after_profiler.
# Prediction: wall_ms_stage reproduces the bench's ~1.87 ms at c1 x4; then either wall_ms_entry / wall_ms_configs
# ~1.87 as well (the gap is the bench's way of timing: wall_ms against split_call) or ~1.68 (it is the position in the
# stage loop or the call form).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=$OUT/run4; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session46/run4/command.sh" > $W/command.txt
echo "== mamba3_wall_gap.py c1 x1 / x4 ($SECONDS s)"
timeout 500 python bench/mamba3_wall_gap.py --out $W --cases c1_four_mixed --scales 1,4 > $W/wall_gap.log 2>&1
echo "rc=$?"; grep -v -i "warn" $W/wall_gap.log | tail -12
echo "== done ($SECONDS s)"
