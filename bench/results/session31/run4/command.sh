#!/usr/bin/env bash
# Session 31 run 4 (device, one call), at e0d8a65: the Mamba-3 entry's fast path (`replay_recent`: a call with the
# layout of the most recently used graph replays it before the entry's checks; the graph posts addresses it took
# when it checked the layout, and the next call's result addresses are taken after each replay), bench/_ab carried
# (pkgs/ssmkit_s30main = e69e99c, session 30's main: the same kernels; remake: python bench/ab_package.py --commit
# e69e99c --name ssmkit_s30main). Runs 2-3 (H100) found the GPU idle 33-65 us per call before the graph's work
# (span - queued): validation 8.8 us, postable 4.5, dispatch checks 1.6, the post of 33 addresses 5.6, then
# graph.replay() (~8-16). Steps: 0. the CUDA tests of the Mamba-3 graph, MappedIO and the Granite fast layer (it
# posts through the same MappedIO); 1. the public entry through its graph against session 30's main, every visible
# panel (wall interleaved, queued); 2. the wall split with its probe.
# Predictions: 0. pass; 1. queued level (+/-2 us: the same GPU work), wall -10 to -15 us per call, max rel diff 0;
# 2. pre ~10-15 us (was 23-36), addresses_if_layout ~5-7 us, post_addresses ~1 us.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
W=/tmp/s31r4; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
pack() { tar czf "$OUT/run4.tgz" -C $W .; }
echo "== 0. CUDA tests ($SECONDS s)"
timeout 240 python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py tests/kernels/common \
  tests/granite/test_fast_layer.py > $W/pytest_cuda.log 2>&1; echo "rc=$?"; tail -1 $W/pytest_cuda.log
grep -E "FAILED|Error" $W/pytest_cuda.log | head -8; pack
echo "== 1. A/B public entry, graph, against session 30's main ($SECONDS s)"
timeout 200 python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s30main --out $W/ab_graph \
  2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json" | cut -c1-260; pack
echo "== 2. wall split ($SECONDS s)"
timeout 120 python bench/mamba3_wall_split.py --out $W/split 2>&1 | grep -v "Warn\|warn(" | tail -8; pack
echo "== done ($SECONDS s)"
