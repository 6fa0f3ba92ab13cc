#!/usr/bin/env bash
# Session 45 run 5 (device, the same warm H200, inline as here): `mamba3 selfcheck` of main's code on the issue's card.
# Prediction: PASS, every check ok; G higher than on the H100s (the eager baseline's time moves with the host).
export PYTHONUNBUFFERED=1 PYTHONPATH=src; W=$OUT/r5; mkdir -p $W
nvidia-smi --query-gpu=name --format=csv,noheader | tee $W/gpu.txt
timeout 95 python -m ssmkit.cli mamba3 selfcheck --json $W/selfcheck.json > $W/selfcheck.log 2>&1
echo rc=$?; tail -12 $W/selfcheck.log
