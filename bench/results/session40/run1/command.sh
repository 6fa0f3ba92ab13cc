#!/usr/bin/env bash
# Session 40 run 1 (device, one call; carry ["bench/_ab"]): session 39's two prepared runs in one call, unchanged:
# run 9 (five launch options through the graph, median queued time of 6 alternating rounds) and run 10 (session 36's
# launch changes re-measured as whole code versions v27 / v28 / v30 against main). Predictions: as written in each
# script (run 9: each option within +-3 us of main or slower; run 10: v27 -> v28 -2 to -6 us, v28 -> v30 -2 to -8,
# v30 -> main 0 to -6 at c3 / c4 / c7; all results bit-identical).
set -u
OUT="${OUT:-out}"; mkdir -p "$OUT"
BUDGET=250 bash bench/results/session39/run9/command.sh
BUDGET=330 bash bench/results/session39/run10/command.sh
