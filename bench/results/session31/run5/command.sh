#!/usr/bin/env bash
# Session 31 run 5 (device, one call): the judge of experiments v26 (main with the entry's fast path, e0d8a65 and
# later) and, in the same call on the same host, of v25 (session 27's code, judged on an H100 in session 30: G = 34.26),
# so that the two G's compare (the judge's G moves with the host's eager-reference time). Outputs packed per step.
# Prediction: both PASS; v26's candidate times 0.02 ms per call below v25's at most panels (the judge times a call
# in its worker the way the fast path serves: same shapes, new tensors), G +3 to +5 %.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s31r5; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
pack() { tar czf "$OUT/run5.tgz" -C $W .; }
for v in v26 v25; do
  echo "== judge $v ($SECONDS s)"
  timeout 250 python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/$v/solver.py \
    --json $W/judge_$v.json > $W/judge_$v.log 2>&1; echo "rc=$?"; tail -12 $W/judge_$v.log; pack
done
echo "== done ($SECONDS s)"
