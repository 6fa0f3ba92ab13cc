#!/usr/bin/env bash
# Session 18 run 4: the side kernel's shared-memory stores are 2/3 bank conflicts (run 3): its wgmma (MMA v3) tf32
# dots take N-contiguous B tiles, which Triton transposes into K-major shared memory with scalar stores. Same
# kernels with MMA v2 (DISABLE_MMA_V3=1, whole process, own cache), side register cap 168 and none.
set -u
export PYTHONPATH=src
CFG='[{"side_maxnreg": 0}]'
for v in 0 1; do
  echo "DISABLE_MMA_V3=$v"
  DISABLE_MMA_V3=$v TRITON_CACHE_DIR=/tmp/tc_$v timeout 250 python bench/mamba3_config_sweep.py --out $OUT/mma_v3_off_$v \
    --cases c1_four_mixed,c4_short_and_longest --configs "$CFG" 2>&1 | grep -v -i warn | cut -c1-60,200-420 | tail -4
done
