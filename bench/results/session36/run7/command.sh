#!/usr/bin/env bash
# Session 36 run 7 (device, one call). Runs 4-5's timelines: the chunk scan takes 97.5 us at c1 beside the
# state-gradient chain (60.4 us, 256 programs each serial over its sequence's chunks) against ~50 launched alone
# (run 3's direct forward split), so the overlap buys ~10 us: the chain's programs hold SM slots while they wait on
# their serial steps. The chain's chunk-parallel form (Mamba3BwdConfig.dstate_scan: a local-term kernel over every
# chunk slot, then an elementwise reverse scan; measured slower alone in sessions 5-6) has no long-lived programs, so
# beside the forward scan it may share the SMs better. Through the graph against the defaults, the default given again
# as a control; then the timeline of the better form if it wins (printed for c1 only).
# Predictions: control within +-3 us; dstate_scan -5 to +15 us at c1-c5 (unknown sign: its local-term kernel's
# 1184 programs compete with the scan's at full occupancy, the elementwise scan is short); scan_block 2048 within
# +-3 of 1024.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s36r7; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
pack() { tar czf "$OUT/run7.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== the chain's two forms through the graph ($SECONDS s)"
timeout $(cap 240) python bench/mamba3_ab.py --configs '[{"dstate_scan": false}, {"dstate_scan": true},
  {"dstate_scan": true, "scan_block": 2048}, {"dstate_scan": true, "dstate_warps": 8}]' \
  --cases c1_four_mixed,c4_short_and_longest,c5_three_even,c8_small_three \
  --out $W/ab_chain 2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|rror" | cut -c1-420; pack
echo "== done ($SECONDS s)"
