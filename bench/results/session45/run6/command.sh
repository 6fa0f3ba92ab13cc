#!/usr/bin/env bash
# Session 45 run 6 (device, the same warm H200, inline as here): `granite verify` of the fast layer on the issue's card.
# Prediction: PASS 117/117 (session 33's H200, every H100 since).
export PYTHONUNBUFFERED=1 PYTHONPATH=src; W=$OUT/r6; mkdir -p $W
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
timeout 90 python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py --json $W/granite_verify.json \
  > $W/granite_verify.log 2>&1
echo rc=$?; tail -4 $W/granite_verify.log
