#!/usr/bin/env bash
# Session 12 run 4 (device): where the host time of a call goes, per function (cProfile), for the left-padded
# prefill, the B=1 L=4096 prefill and the B=1 decode, beside the call gaps.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
timeout 200 python bench/granite_call_gap.py --calls 20 --cprofile 100 \
  --workloads prefill_varlen_b8,prefill_b1_l4096,decode_b1 --out "$OUT/call_gap_cprofile.json" 2>&1 | grep -v Warn
