#!/usr/bin/env bash
# Session 27 run 1 (device, one call, on main): session 26's prepared runs 1 and 2 (their command files say why and
# what they predict), their outputs packed into one archive ($OUT takes 8 files at most).
set -u
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s27r1; mkdir -p $W/run1 $W/run2
OUT=$W/run1 timeout 330 bash bench/results/session26/run1/command.sh
OUT=$W/run2 timeout 240 bash bench/results/session26/run2/command.sh
tar czf "$OUT/run1.tgz" -C $W .
