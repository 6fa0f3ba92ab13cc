#!/usr/bin/env bash
# Session 39 run 10 (prepared, for a later session; device, one call; carry ["bench/_ab"]): session 36's two kept
# launch changes re-measured with the median queued time (bench/mamba3_ab.py interleaved_queued_ms), whole code
# versions side by side in one process, each through its own graph. Their single-round gains were within the order
# bias session 39 found (up to ~6 us): the passing launched before the rotate kernel (v27 -> v28: -3.5 to -5 us) and
# the copy of the small arguments beside the chunk-state kernel (v28 -> v30: -2 to -8 us; v29's code plus a same-bits
# mend). Main (the working tree) adds the chunk-state register cap (v31).
# Make the packages first (git-ignored, carried):
#   python bench/ab_package.py --commit 31b419e --name ssmkit_v27
#   python bench/ab_package.py --commit 8836768 --name ssmkit_v28
#   python bench/ab_package.py --commit 9cb0532 --name ssmkit_v30
# Predictions: v27 -> v28 -2 to -6 us, v28 -> v30 -2 to -8 us, v30 -> main 0 to -6 us (c3 / c4 / c7); every result
# bit-identical across the four.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s39r10; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
echo "bash bench/results/session39/run10/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run10.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
P=bench/_ab/pkgs
echo "== graph A/B of whole versions ($SECONDS s)"
timeout $(cap 300) python bench/mamba3_ab.py --package $P/ssmkit_v27 --package $P/ssmkit_v28 --package $P/ssmkit_v30 \
  --out $W/ab 2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|rror" | cut -c1-400; pack
python - "$W/ab/mamba3_ab.json" <<'PY' | tee $W/queued_rounds.txt
import json, sys
for row in json.load(open(sys.argv[1]))["rows"]:
    print(row["case"], "  ".join(f"{k}: {min(v) * 1e3:.0f}-{max(v) * 1e3:.0f}" for k, v in row["queued_ms_rounds"].items()))
PY
pack
echo "== done ($SECONDS s)"
