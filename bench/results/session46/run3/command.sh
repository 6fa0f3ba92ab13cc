#!/usr/bin/env bash
# Session 46 run 3 (inline, on the H100 run 2 left warm; 49 s): `mamba3_bench.py` at 4x alone in a fresh process,
# to see whether the bench's wall gap at 4x (session 45 run 1: 0.27-0.37 ms after the x1 and x2 rows) needs the
# earlier rows' history.
mkdir -p $OUT/b4 && echo "bash: python bench/mamba3_bench.py --scales 4 (fresh process; session 46 run 3)" > $OUT/b4/command.txt && nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/b4/gpu.txt && PYTHONPATH=src timeout 300 python bench/mamba3_bench.py --out $OUT/b4 --commit e8d827c --scales 4 > $OUT/b4/bench.log 2>&1; echo rc=$?; grep -E "^c[0-9]|wall|queued" $OUT/b4/bench.log | head -30
