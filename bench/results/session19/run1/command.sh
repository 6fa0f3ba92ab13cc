#!/usr/bin/env bash
# Session 19 run 1: the side kernel's four dots as three bf16 dots of split operands (side_precision "bf16x3":
# 16-bit operands may be staged in either orientation, so no element-wise transposing stores), under register caps
# 168 (the default) / 200 / 232 / none and at 8 warps; the backward's GPU time per kernel against the default.
set -u
export PYTHONPATH=src
nvidia-smi --query-gpu=name,driver_version --format=csv
timeout 500 python bench/mamba3_config_sweep.py --out $OUT/sweep --cases c1_four_mixed,c4_short_and_longest \
  --configs '[{"side_precision": "bf16x3"}, {"side_precision": "bf16x3", "side_maxnreg": 200}, {"side_precision": "bf16x3", "side_maxnreg": 232}, {"side_precision": "bf16x3", "side_maxnreg": 0}, {"side_precision": "bf16x3", "side_warps": 8, "side_maxnreg": 168}, {"side_precision": "bf16x3", "side_warps": 8, "side_maxnreg": 0}]' 2>&1 | grep -v Warn | cut -c1-400 | tail -24
