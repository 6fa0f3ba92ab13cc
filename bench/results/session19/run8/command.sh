#!/usr/bin/env bash
# Session 19 run 8: judge of experiments v17 (M o G stored split into bf16, run 7), the device's last minutes.
export PYTHONPATH=src; timeout 170 python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v17/solver.py --json $OUT/mamba3_judge.json > $OUT/mamba3_judge.log 2>&1; echo rc=$?; tail -12 $OUT/mamba3_judge.log
