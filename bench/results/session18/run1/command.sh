#!/usr/bin/env bash
# Session 18 run 1: Nsight Compute on the Mamba-3 c1 call (every kernel's sections; source lines of the side and
# intra kernels), then the forward register caps re-measured (chunk_maxnreg / rotate_maxnreg 0 against the defaults).
set -u
export PYTHONPATH=src
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
OUT=$OUT/ncu TARGETS=mamba3_c1 SOURCE_KERNELS=_m3b_sides_kernel,_m3b_intra_kernel timeout 330 bash bench/ncu_run.sh
timeout 150 python bench/mamba3_config_sweep.py --fwd --out $OUT/sweep --cases c1_four_mixed,c4_short_and_longest \
  --configs '[{"chunk_maxnreg": 0}, {"rotate_maxnreg": 0}, {"chunk_maxnreg": 112}]' 2>&1 | tail -40
