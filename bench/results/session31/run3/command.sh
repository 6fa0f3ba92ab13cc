#!/usr/bin/env bash
# Session 31 run 3 (device, one call, an H100; the H200 kind would not start at 17:18 and 17:29 UTC): the wall split
# again with its new host-pieces probe. Run 2 found the public call's GPU idle for 35-65 us before the graph's work
# starts (span - queued), about the host's time before the replay (23-44 us) plus the replay call (13-26 us). The
# probe times each step of that path alone (validation on a remembered layout, the dispatch checks, the 17 postable,
# the stream check, the post of 33 addresses, graph.replay() alone, the 16 result allocations).
# Prediction: validate ~8-15 us, postable ~4-8, post ~6-12, graph.replay() alone ~8-12 us of host time.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
W=/tmp/s31r3; mkdir -p $W/mamba3
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
pack() { tar czf "$OUT/run3.tgz" -C $W .; }
echo "== mamba3 wall split ($SECONDS s)"
timeout 120 python bench/mamba3_wall_split.py --out $W/mamba3 2>&1 | grep -v "Warn\|warn(" | tail -8; pack
echo "== done ($SECONDS s)"
