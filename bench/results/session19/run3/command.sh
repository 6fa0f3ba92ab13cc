#!/usr/bin/env bash
# Session 19 run 3: run 1's split-bf16 side dots converted with F2F (quarter-rate conversion pipe: ~256 per thread
# per program); here the split is integer shifts / masks (`_m3b_split_bf16`, no conversion instructions, offline).
# Sweep of side caps (none / 200 / 232 / 168) against the default, then run 2's LSU split (tf32 default vs bf16x3
# uncapped) with Nsight Compute, one c1 call each.
set -u
export PYTHONPATH=src
nvidia-smi --query-gpu=name,driver_version --format=csv
timeout 300 python bench/mamba3_config_sweep.py --out $OUT/sweep --cases c1_four_mixed,c4_short_and_longest \
  --configs '[{"side_precision": "bf16x3", "side_maxnreg": 0}, {"side_precision": "bf16x3", "side_maxnreg": 200}, {"side_precision": "bf16x3", "side_maxnreg": 232}, {"side_precision": "bf16x3"}]' > $OUT/sweep.log 2>&1
python - $OUT/sweep/mamba3_bwd_sweep.json <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    c = r["config"]
    print(f'{r["case"]:22s} {c["side_precision"]:7s} cap {c["side_maxnreg"]:3d}  bwd {r["bwd_gpu_ms"]:.3f}  sides '
          f'{r["kernels_ms"]["_m3b_sides_kernel"]:.3f}  max diff {max(r["vs_default"].values()):.2e}')
PY
OUT=$OUT/ncu bash bench/results/session19/run2/command.sh
