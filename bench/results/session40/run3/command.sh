#!/usr/bin/env bash
# Session 40 run 3 (device, one call): main after the revert (the code of session 39's v31).
# 1. Session 39's prepared run 9, unchanged: five launch options through the graph, median queued time of 6
#    alternating rounds (prediction there: each within +-3 us of main at every case, or slower; same bits).
# 2. Nsight Compute over one c1 call (graph kernel nodes, each profiled alone), register counts per thread as the
#    device built each kernel (launch__registers_per_thread) beside the register-limited programs per SM: does the
#    offline sm_90 count (bench/sass_stats.py) hold? Session 39 run 1 left one register limit unexplained: the finish
#    kernel, 5 programs per SM reported against 6 from its offline 80 registers. Prediction: every kernel's device
#    count equals the offline count for the same launch (chunk state 127 capped, sides / intra 168, passing 79, dPhi
#    carry 70, gate 32), the finish's above 80 (~88-96, matching 5 programs per SM).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s40r3; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session40/run3/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run3.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
M=launch__registers_per_thread,launch__occupancy_limit_registers,launch__grid_size,launch__block_size
M=$M,launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic,gpu__time_duration.sum
echo "== ncu registers over one c1 call ($SECONDS s)"
timeout $(cap 150) "$NCU" --clock-control none --profile-from-start off --metrics "$M" --csv \
  python bench/ncu_profile.py --targets mamba3_c1 > $W/ncu_regs.csv 2> $W/ncu.log
echo "rc=$?"; tail -2 $W/ncu.log
python - "$W/ncu_regs.csv" <<'PY' | tee $W/regs_table.txt
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head, rows = rows[0], rows[1:]
ix = {k: head.index(k) for k in ("ID", "Kernel Name", "Metric Name", "Metric Value")}
by = {}
for r in rows:
    by.setdefault((int(r[ix["ID"]]), r[ix["Kernel Name"]][:34]), {})[r[ix["Metric Name"]]] = r[ix["Metric Value"]]
print(f"{'kernel':36s} {'regs':>5s} {'limit':>5s} {'grid':>6s} {'block':>5s} {'smem':>6s} {'dsmem':>6s} {'ns':>8s}")
for (i, name), m in sorted(by.items()):
    print(f"{name:36s} {m['launch__registers_per_thread']:>5s} {m['launch__occupancy_limit_registers']:>5s} "
          f"{m['launch__grid_size']:>6s} {m['launch__block_size']:>5s} {m['launch__shared_mem_per_block_static']:>6s} "
          f"{m['launch__shared_mem_per_block_dynamic']:>6s} {m['gpu__time_duration.sum']:>8s}")
PY
pack
echo "== run 9 ($SECONDS s)"
BUDGET=$(( ${BUDGET:-585} - SECONDS )) OUT=$W bash bench/results/session39/run9/command.sh
mkdir -p $W/run9 && tar xzf $W/run9.tgz -C $W/run9; rm -f $W/run9.tgz
pack
echo "== done ($SECONDS s)"
