#!/usr/bin/env bash
# Session 46 run 1 (device, one call): the Granite proofs of main's layer on the card that comes.
# 1. `granite judge` of experiments v18 (main's fast layer as one file; the last judged file, v17, is session 21's
#    code: since then the prefill fast path (session 32) and host-side mends) in its isolated worker;
# 2. `bench/granite_profile.py`: per workload, the kernel list and GPU time per call beside the floors (issue 5's
#    "profile per workload"; the last full one in bench/granite/NOTES.md is session 12's, d931ad4, on an H100/H200 mix).
# Predictions: 1 PASS with every check ok, G 7-9 (v17 8.17 on an H200; the judge's per-call times sit above `granite
# bench`'s); decode timings may be flagged unstable as in every earlier judge. 2 GPU sums per call on an H200:
# prefill 290-320 / 1080-1160 / 1050-1150 us, decode 15-18 / 25-29 / 65-85 us (H100, session 12: 313 / 1142 / 1087,
# 16.4 / 27.2 / 82.6); on an H100 as session 12's within 5 %.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s46r1; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session46/run1/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run1.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== granite profile ($SECONDS s)"
timeout $(cap 120) python bench/granite_profile.py --calls 20 --out $W/granite_profile.json > $W/granite_profile.log 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" $W/granite_profile.log | grep -E "^==|GPU sum|floor" | head -30; pack
echo "== granite judge v18 ($SECONDS s)"
timeout $(cap 440) python -m ssmkit.cli granite judge --candidate experiments/granite/versions/v18/candidate.py \
  --json $W/granite_judge_v18.json > $W/granite_judge_v18.log 2>&1; echo "rc=$?"; tail -12 $W/granite_judge_v18.log; pack
echo "== done ($SECONDS s)"
