#!/usr/bin/env bash
# Session 47 run 3 (device, one call): `granite judge` of experiments v19 (main's layer as one file: v18 plus the
# "addressed" prefill graphs, prefill_address_graphs on) in its isolated worker. The judge rotates 3 input sets per
# workload, held by the worker, so its B = 1 prefill calls reuse 3 addresses and take addressed graphs from their
# second sighting.
# Prediction: PASS with every check ok; on an H100 G 7.5-9 (v18 7.80 on an H100 in session 46), the B = 1 prefill
# rows' candidate times 20-40 us below v18's (0.700 / 1.609 ms), the rest within the judge's noise (decode rows may
# be flagged unstable, as in every earlier judge).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s47r3; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session47/run3/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run3.tgz" -C $W .; }
echo "== granite judge v19 ($SECONDS s)"
timeout 560 python -m ssmkit.cli granite judge --candidate experiments/granite/versions/v19/candidate.py \
  --json $W/granite_judge_v19.json > $W/granite_judge_v19.log 2>&1; echo "rc=$?"; tail -12 $W/granite_judge_v19.log
pack
echo "== done ($SECONDS s)"
