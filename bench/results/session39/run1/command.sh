#!/usr/bin/env bash
# Session 39 run 1 (session 38's run 3, DRAM bytes added; device, one call): how much SM time each Mamba-3 kernel
# leaves idle when it runs alone (its last round of programs, its ramp), from Nsight Compute counters over one c1 call of main's code (bench/ncu_profile.py,
# the graph's kernels each profiled alone): sm__cycles_active avg / min / max against gpc__cycles_elapsed.max, waves
# per SM, programs launched, achieved occupancy. Why: intra, sides and finish run in turn and take the same time
# alone as in the graph (run 2's one-stream timeline), so their idle tails are lost time; the wave arithmetic (intra
# 3.07 rounds, sides 12.28 at c1) bounds them at ~14 and ~8 us, if rounds were uniform (bench/mamba3/NOTES.md
# "Session 38", the lead). Prediction: avg / elapsed 0.80-0.92 for intra, 0.90-0.97 for sides, so 5-12 us and 4-14
# us idle; the front kernels' DRAM bytes near the offline count (chunk state 64 MB, passing 84, rotate 63, gate
# 36); the chain far lower (256 programs, one round of serial walks of unequal length: ~0.5-0.7).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s39r1; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session39/run1/command.sh" > $W/command.txt
pack() { tar czf "$OUT/run1.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
"$NCU" --version | tail -1
M=sm__cycles_active.avg,sm__cycles_active.min,sm__cycles_active.max,gpc__cycles_elapsed.max,gpu__time_duration.sum
M=$M,launch__waves_per_multiprocessor,launch__grid_size,launch__occupancy_limit_registers
M=$M,sm__warps_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,dram__bytes_write.sum
echo "== ncu over one c1 call ($SECONDS s)"
timeout $(cap 200) "$NCU" --clock-control none --profile-from-start off --metrics "$M" --csv \
  python bench/ncu_profile.py --targets mamba3_c1 > $W/ncu_metrics.csv 2> $W/ncu.log
echo "rc=$?"; tail -3 $W/ncu.log; pack
python - "$W/ncu_metrics.csv" <<'PY' | tee $W/idle_table.txt
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head, rows = rows[0], rows[1:]
ix = {k: head.index(k) for k in ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value")}
scale = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6,  # durations to ns, sizes to bytes
         "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9}
by = {}
for r in rows:
    by.setdefault((int(r[ix["ID"]]), r[ix["Kernel Name"]][:34]), {})[r[ix["Metric Name"]]] = float(
        r[ix["Metric Value"]].replace(",", "")) * scale.get(r[ix["Metric Unit"]], 1.0)
print(f"{'kernel':36s} {'us':>7s} {'avg/el':>7s} {'min/el':>7s} {'idle us':>8s} {'waves':>6s} {'grid':>6s} {'occ%':>5s}"
      f" {'MB':>6s} {'TB/s':>5s}")
for (i, name), m in sorted(by.items()):
    el = m["gpc__cycles_elapsed.max"]; us = m["gpu__time_duration.sum"] / 1e3
    avg = m["sm__cycles_active.avg"] / el
    mb = (m["dram__bytes_read.sum"] + m["dram__bytes_write.sum"]) / 1e6
    print(f"{name:36s} {us:7.1f} {avg:7.3f} {m['sm__cycles_active.min'] / el:7.3f} {us * (1 - avg):8.1f} "
          f"{m['launch__waves_per_multiprocessor']:6.2f} {m['launch__grid_size']:6.0f} "
          f"{m['sm__warps_active.avg.pct_of_peak_sustained_active']:5.1f} {mb:6.1f} {mb / us:5.2f}")
PY
pack
echo "== done ($SECONDS s)"
