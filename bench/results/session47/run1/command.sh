#!/usr/bin/env bash
# Session 47 run 1 (device, one call): does a B = 1 prefill gain from in_proj inside the captured graph?
# `bench/granite_addressed_prefill.py`: the fast layer as it is (A: in_proj launched eagerly through cuBLAS before the
# "kernels" graph's replay; session 33's host marks on an H100: the GPU's first work 49.8 us after the call, in_proj's
# launch path 28.6 us of host) against a prototype (B) whose graph holds in_proj too, reading the caller's hidden
# states at their address (one graph per address; the same fast-path checks, out_proj and cache clones as A), timed
# as the harness times a call, alternating blocks of 10 calls, outputs and caches compared bit for bit.
# Prediction: B - A = -25 to -35 us at L = 4096 and at L = 16384 (the host lead before the GPU's first kernel shrinks
# from ~45-50 us to ~15-20; no GPU work added); bits equal (the same kernels); B's peak memory above A's by one more
# graph pool per address (~0.1-0.2 GB at 4096, ~0.5-0.8 GB at 16384, x3 addresses).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s47r1; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session47/run1/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run1.tgz" -C $W .; }
echo "== addressed prefill A/B ($SECONDS s)"
timeout 400 python bench/granite_addressed_prefill.py --blocks 20 --out $W/granite_addressed_prefill.json \
  > $W/addressed.log 2>&1; echo "rc=$?"; grep -v "Warn\|warn(" $W/addressed.log | tail -8; pack
echo "== done ($SECONDS s)"
