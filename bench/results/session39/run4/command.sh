#!/usr/bin/env bash
# Session 39 run 4 (device, one call): run 3's graph A/B again after its mend (the fused-gate form joined the second
# side stream with nothing captured on it: the capture failed), plus the state passing's row split in the graph.
# 1. Mamba3BwdConfig.gate_in_chunk_state (dY written by the chunk-state kernel). Run 3's one-stream timeline (c1,
#    H100): the fused chunk-state kernel takes 46.1 us alone, against 33.0 + 11.0 for the two kernels alone (run 2),
#    and in main's graph the pair spans 44.6. Prediction, revised from run 3's: queued -4 to +4 us (level); every
#    result bit-identical.
# 2. passing_block_p 8 (1024 programs of 8 value rows instead of 512 of 16; with 4 or 2 warps): the passing runs
#    beside the rotate kernel (the pair 60 us, each ~30 alone); smaller steps on each program's serial path.
#    Prediction: -3 to +3 us (not known which way); the same bits (the rows are independent).
# 3. The graph CUDA tests, the new fused-gate capture test among them (prediction: 5 of 5 pass).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s39r4; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
echo "bash bench/results/session39/run4/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run4.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
CASES=c1_four_mixed,c2_three_long,c4_short_and_longest,c5_three_even,c8_small_three
echo "== 1-2. graph A/B ($SECONDS s)"
timeout $(cap 260) python bench/mamba3_ab.py --cases $CASES --out $W/ab \
  --configs '[{"gate_in_chunk_state": true}, {"fwd.passing_block_p": 8}, {"fwd.passing_block_p": 8, "fwd.passing_warps": 2}]' \
  2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|^   |json|rror" | cut -c1-300; pack
echo "== timeline at c1, fused gate ($SECONDS s)"
timeout $(cap 60) python bench/mamba3_timeline.py --out $W/timeline_gate --cases c1_four_mixed \
  --calls 5 --config '{"gate_in_chunk_state": true}' 2>&1 | grep -v "Warn\|warn(" | cut -c1-200; pack
echo "== 3. graph CUDA tests ($SECONDS s)"
timeout $(cap 90) python -m pytest -q -p no:cacheprovider tests/mamba3/test_graph_cuda.py > $W/pytest_cuda.log 2>&1
echo "rc=$?"; tail -1 $W/pytest_cuda.log; grep -E "FAILED|Error" $W/pytest_cuda.log | head -8; pack
echo "== done ($SECONDS s)"
