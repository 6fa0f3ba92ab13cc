#!/usr/bin/env bash
# Session 49 run 4 (device, one call, on the machine run 3 left warm; given inline to `run`, kept here as the record):
# `granite judge` of v18 (experiments/granite/versions/v18/candidate.py) and of main's export (v19) one after the
# other on one H100, so that the two judged versions are compared on one machine (run 3's v19 judge read slower on
# every row, decode included, which this change does not touch).
export PYTHONPATH=src PYTHONUNBUFFERED=1; W=$OUT/s49r4; mkdir -p $W; nvidia-smi --query-gpu=name --format=csv,noheader > $W/gpu.txt
python -m ssmkit.cli export granite --out $W/v19_candidate.py
for v in v18 v19; do f=experiments/granite/versions/$v/candidate.py; [ $v = v19 ] && f=$W/v19_candidate.py
  echo "== judge $v ($SECONDS s)"; timeout 260 python -m ssmkit.cli granite judge --candidate $f --json $W/judge_$v.json \
    > $W/judge_$v.log 2>&1; echo rc=$?; tail -9 $W/judge_$v.log; done
