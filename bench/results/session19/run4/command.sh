#!/usr/bin/env bash
# Session 19 run 4: every transposed-operand dot of the backward (the side kernel's four, the intra kernel's
# (M o A)^T dY, the chain's (dY e^l)^T Q~) split into bf16 (Mamba3BwdConfig.transposed_precision "bf16x3", the
# split by integer ops rounded to nearest): the sweep against the default (per-kernel GPU times), side cap none /
# 168; then mamba3_bench at the visible cases with that config (errors of the 16 results against float64, times).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
commit="${SSMKIT_GIT_COMMIT:-unknown}"
nvidia-smi --query-gpu=name,driver_version --format=csv
timeout 200 python bench/mamba3_config_sweep.py --out $OUT/sweep --cases c1_four_mixed,c4_short_and_longest \
  --configs '[{"transposed_precision": "bf16x3", "side_maxnreg": 0}, {"transposed_precision": "bf16x3"}]' > $OUT/sweep.log 2>&1
python - $OUT/sweep/mamba3_bwd_sweep.json <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    c, k = r["config"], r["kernels_ms"]
    print(f'{r["case"]:22s} {c["transposed_precision"]:7s} cap {c["side_maxnreg"]:3d}  bwd {r["bwd_gpu_ms"]:.3f}  sides '
          f'{k["_m3b_sides_kernel"]:.3f} intra {k["_m3b_intra_kernel"]:.3f} chain {k["_m3b_dstate_kernel"]:.3f}'
          f'  max diff {max(r["vs_default"].values()):.2e}')
PY
timeout 300 python bench/mamba3_bench.py --out "$OUT" --commit "$commit" --scales 1 \
  --cases-bwd-config '{"transposed_precision": "bf16x3", "side_maxnreg": 0}' > "$OUT/mamba3_bench.log" 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" "$OUT/mamba3_bench.log" | grep -E "^c[0-9]|targets|json:|worst|error" | head -30
