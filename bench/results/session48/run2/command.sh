#!/usr/bin/env bash
# Session 48 run 2 (device, one call; not run: device loans were paused): `granite judge` of experiments v19, main's
# fast layer exported as one file here with prefill_address_graphs flipped on in the export ($W/v19_candidate.py,
# returned in run2.tgz: copy it to experiments/granite/versions/v19/candidate.py if kept). Once the layer's default
# is True, drop the sed and judge the export as it comes.
# Prediction: PASS with every check ok; the B = 1 prefill rows 20-35 us below v18's judged times on the same card
# kind (v18, H100: 0.700 / 1.609 ms), the varlen and decode rows as v18's within the judge's noise.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s48r2; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session48/run2/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run2.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
python -m ssmkit.cli export granite --out $W/v19_candidate.py \
  && sed -i 's/self.prefill_address_graphs = False.*/self.prefill_address_graphs = True/' $W/v19_candidate.py
if ! grep -q "self.prefill_address_graphs = True" $W/v19_candidate.py; then
  echo "export or flip failed: stop"; pack; exit 1
fi
echo "== granite judge v19 ($SECONDS s)"
timeout $(cap 560) python -m ssmkit.cli granite judge --candidate $W/v19_candidate.py \
  --json $W/granite_judge_v19.json > $W/granite_judge_v19.log 2>&1; echo "rc=$?"; tail -12 $W/granite_judge_v19.log; pack
echo "== done ($SECONDS s)"
