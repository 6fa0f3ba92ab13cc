#!/usr/bin/env bash
# Session 49 run 3 (device, one call): `granite judge` of experiments v19, main's fast layer exported as one file
# (prefill_address_graphs on by default now: its own LRU, the shape's shared pool). $W/v19_candidate.py comes back in
# run3.tgz: copy it to experiments/granite/versions/v19/candidate.py if kept.
# Prediction: PASS with every check ok; the B = 1 prefill rows 20-55 us below v18's judged times on the same card
# kind (v18, H100: 0.700 / 1.609 ms), the varlen and decode rows as v18's within the judge's noise.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s49r3; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session49/run3/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run3.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
python -m ssmkit.cli export granite --out $W/v19_candidate.py
if ! grep -q "self.prefill_address_graphs = True" $W/v19_candidate.py; then
  echo "export failed or the switch is off: stop"; pack; exit 1
fi
echo "== granite judge v19 ($SECONDS s)"
timeout $(cap 570) python -m ssmkit.cli granite judge --candidate $W/v19_candidate.py \
  --json $W/granite_judge_v19.json > $W/granite_judge_v19.log 2>&1; echo "rc=$?"; tail -12 $W/granite_judge_v19.log; pack
echo "== done ($SECONDS s)"
