#!/usr/bin/env bash
# Session 31 run 1 (device, one call, an H200): main's code on the H200 kind the targets were measured on (Mamba-3
# intra capped at 168 by default, session 27's saved scores, and since e0d8a65 the entry's fast path; Granite
# kernels unchanged since session 22, its MappedIO posts through post_addresses since e0d8a65).
# Session 30's run 2 ran on an H100, and its mamba3_bench ran out of its 80 s. Steps: `granite verify`,
# `granite bench` (16 pairs, the plot), `mamba3_wall_split.py` (new: where the public call's wall time
# goes beyond its queued GPU time), then `mamba3_bench` (scales 1, 300 s). Outputs are packed after every step.
# Predictions: verify PASS 117/117; bench within session 22's H200 ranges (prefill 0.37-0.40 / 1.24-1.30 / 1.18-1.19
# ms, decode 0.050-0.051 / 0.057 / 0.099-0.106); mamba3 errors as in session 30 run 1 (dq/dk 2.34e-3, dv 1.74e-3),
# c1 full call queued ~0.42 ms and wall ~0.47 on an H200 (session 27: ~0.49 wall; the fast path -19 to -26 us on an
# H100, run 4); the wall split: span - queued ~0.03-0.04 ms.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
W=/tmp/s31r1; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
pack() { tar czf "$OUT/run1.tgz" -C $W .; }
echo "== granite verify ($SECONDS s)"
timeout 150 python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py --json $W/granite_verify.json \
  > $W/granite_verify.log 2>&1; echo "rc=$?"; tail -1 $W/granite_verify.log; pack
echo "== granite bench ($SECONDS s)"
timeout 150 python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py --json $W/granite_bench.json \
  --plot $W/granite_bench.png > $W/granite_bench.log 2>&1; echo "rc=$?"; grep -v -i warn $W/granite_bench.log | tail -12
pack
echo "== mamba3 wall split ($SECONDS s)"
timeout 120 python bench/mamba3_wall_split.py --out $W/mamba3 2>&1 | grep -v "Warn\|warn(" | tail -8; pack
echo "== mamba3 bench ($SECONDS s)"
mkdir -p $W/mamba3
timeout 300 python bench/mamba3_bench.py --out $W/mamba3 --commit "$commit" --scales 1 > $W/mamba3/mamba3_bench.log 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" $W/mamba3/mamba3_bench.log | grep -E "^c[0-9]|targets|json:" | grep -v deterministic \
  | sort -u | head -12; pack
echo "== done ($SECONDS s)"
