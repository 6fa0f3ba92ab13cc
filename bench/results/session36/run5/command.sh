#!/usr/bin/env bash
# Session 36 run 5 (device, one call, carry ["bench/_ab"]: pkgs/ssmkit_s36base = 3135c13, the code before the change;
# remake with `python bench/ab_package.py --commit 3135c13 --name ssmkit_s36base`). The forward's state passing
# launched before the rotate kernel (8836768): run 4's timeline showed the forked pair serialised at c1 (rotate
# 48.4-97.2 us, the passing only from 75.6 to 113.4, the scan waiting for it), the passing dispatched after the
# rotate kernel's waves. Steps: 1. the public entry through its graph against 3135c13, every visible case; 2. the
# timeline again (c1 / c5 / c8); 3. the graph CUDA tests (the fork / join test of the rotate stream among them).
# Predictions: 1. every result bit-identical; queued -10 to -20 us per call at c1-c7 (the pair ~45-55 us instead
# of 65), c8 -3 to -6; 2. the passing starting with the rotate kernel; 3. pass.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s36r5; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
pack() { tar czf "$OUT/run5.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== 1. A/B public entry, graph, against 3135c13 ($SECONDS s)"
timeout $(cap 240) python bench/mamba3_ab.py --package bench/_ab/pkgs/ssmkit_s36base --out $W/ab_graph 2>&1 \
  | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|rror" | cut -c1-300; pack
echo "== 2. timeline ($SECONDS s)"
timeout $(cap 120) python bench/mamba3_timeline.py --out $W/timeline 2>&1 | grep -v "Warn\|warn(" | cut -c1-200; pack
echo "== 3. graph CUDA tests ($SECONDS s)"
timeout $(cap 150) python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py > $W/pytest_cuda.log 2>&1
echo "rc=$?"; tail -1 $W/pytest_cuda.log; grep -E "FAILED|Error" $W/pytest_cuda.log | head -8; pack
echo "== done ($SECONDS s)"
