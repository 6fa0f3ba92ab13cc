#!/usr/bin/env bash
# Session 31 run 2 (device, one call, an H100: the H200 kind would not start at 17:18 and 17:29 UTC): main's code
# (b3ba1f1) — the new `bench/mamba3_wall_split.py` (where the public call's wall time goes beyond its queued GPU time,
# c1 / c5 / c8), then `mamba3_bench` at scales 1 (session 30's run 2 ran out of its 80 s at c7). H100 figures are
# not comparable with the H200 targets; the split's host parts depend on the host, not on the GPU kind.
# Predictions: wall - queued ~0.05-0.07 ms at c1 and c5, of which host before the replay ~0.01-0.02, the replay call
# ~0.01-0.02, the synchronize's return ~0.01; mamba3_bench as session 30's run 1 (errors dq / dk 2.34e-3, dv 1.74e-3,
# worst ratio 0.75, deterministic).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
W=/tmp/s31r2; mkdir -p $W/mamba3
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
pack() { tar czf "$OUT/run2.tgz" -C $W .; }
echo "== mamba3 wall split ($SECONDS s)"
timeout 120 python bench/mamba3_wall_split.py --out $W/mamba3 2>&1 | grep -v "Warn\|warn(" | tail -8; pack
echo "== mamba3 bench ($SECONDS s)"
timeout 300 python bench/mamba3_bench.py --out $W/mamba3 --commit "$commit" --scales 1 > $W/mamba3/mamba3_bench.log 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" $W/mamba3/mamba3_bench.log | grep -E "^c[0-9]|targets|json:" | grep -v deterministic \
  | sort -u | head -12; pack
echo "== done ($SECONDS s)"
