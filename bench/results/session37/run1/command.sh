#!/usr/bin/env bash
# Session 37 run 1 (device, one call). The backward's intra-chunk part computed by the full-VJP call's forward chunk
# scan (Mamba3BwdConfig.intra_in_scan; intra.py): G = dY V^T, M o G, e, dl's intra part and dv's intra part from the
# masked scores, V and dY in the scan's registers; the masked scores are no longer stored and read back, and the
# intra kernel keeps only dv's state term (offline, sm_90, 168 cap: the scan 2272 -> 5192 SASS, 4 -> 291 spill
# instructions (255 registers and 98 uncapped); the intra kernel 2584 -> 904 SASS, 154 registers).
# Steps: 1. graph A/B, default configs against intra_in_scan at the scan's 168 cap, uncapped and at 232 (c1, c4, c5,
# c8); 2. timelines of c1, default and intra_in_scan.
# Predictions: 1. results within ~1e-6 norm-relative of the default's (dv / dl / the gradients through M o G may
# differ in their last bits: the same operands, another kernel's dot); queued c1 -10 to -25 us at the 168 cap (the
# intra kernel's ~62 us leave the critical path; the scan grows by ~35 us, the dv-state kernel ~15 us); uncapped
# within +-10 us of the capped; 2. the scan ~130 us beside the chain (was 96), intra ~15 us (was 62).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s37r1; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
pack() { tar czf "$OUT/run1.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
CASES=c1_four_mixed,c4_short_and_longest,c5_three_even,c8_small_three
echo "== 1. graph A/B of configs ($SECONDS s)"
timeout $(cap 240) python bench/mamba3_ab.py --cases $CASES --out $W/ab_configs --configs \
  '[{"intra_in_scan": true}, {"intra_in_scan": true, "fwd.scan_maxnreg": 0}, {"intra_in_scan": true, "fwd.scan_maxnreg": 232}]' \
  2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|^   |json|rror" | cut -c1-300; pack
echo "== 2. timelines ($SECONDS s)"
for cfg in '{}' '{"intra_in_scan": true}'; do
  echo "-- $cfg"
  timeout $(cap 60) python bench/mamba3_timeline.py --out $W/timeline_$(echo "$cfg" | tr -dc 'a-z') --cases c1_four_mixed \
    --calls 5 --config "$cfg" 2>&1 | grep -v "Warn\|warn(" | cut -c1-200; pack
done
echo "== done ($SECONDS s)"
