#!/usr/bin/env bash
# Session 18 run 2: the side kernel is LSU-bound (run 1's Nsight pass); more warps per SM at the same shared-memory
# traffic, measured: side kernel at 8 warps (cap 128: two programs per SM; uncapped), and the intra kernel at 8 warps.
set -u
export PYTHONPATH=src
nvidia-smi --query-gpu=name,driver_version --format=csv
timeout 400 python bench/mamba3_config_sweep.py --out $OUT/sweep --cases c1_four_mixed,c4_short_and_longest \
  --configs '[{"side_warps": 8, "side_maxnreg": 128}, {"side_warps": 8, "side_maxnreg": 0}, {"side_warps": 8, "side_maxnreg": 168}, {"num_warps": 8}]' 2>&1 | grep -v Warn | cut -c1-400 | tail -20
