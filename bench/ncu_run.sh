#!/usr/bin/env bash
# Nsight Compute pass over the kernels of bench/ncu_profile.py (H200, Firecracker runtime: ncu reads counters there;
# clocks left alone). Writes under $OUT: kernels_details.csv (per kernel: speed of light, occupancy, launch,
# warp states, memory and compute workload, instruction stats) and kernels_raw.csv (every collected metric).
# (A SourceCounters pass was removed in session 19: its CSV held the source text without per-line metrics,
# bench/mamba3/NOTES.md "Session 18"; per-line attribution is offline, bench/sass_stats.py --lines.)
# Usage (CUDA): OUT=dir TARGETS=granite_l16384,mamba3_c1 bash bench/ncu_run.sh
set -u
OUT=${OUT:-/tmp/ncu}
TARGETS=${TARGETS:-granite_l16384,granite_varlen,granite_decode64,mamba3_c1}
mkdir -p "$OUT"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
"$NCU" --version | tail -1
SECTIONS="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats
 --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section InstructionStats --section SchedulerStats"
# shellcheck disable=SC2086
"$NCU" --clock-control none --profile-from-start off $SECTIONS -o "$OUT/kernels" -f \
  python bench/ncu_profile.py --targets "$TARGETS" > "$OUT/ncu_kernels.log" 2>&1 || echo "ncu kernels pass failed"
tail -5 "$OUT/ncu_kernels.log"
"$NCU" --import "$OUT/kernels.ncu-rep" --page details --csv > "$OUT/kernels_details.csv" 2>&1
"$NCU" --import "$OUT/kernels.ncu-rep" --page raw --csv > "$OUT/kernels_raw.csv" 2>&1
rm -f "$OUT/kernels.ncu-rep"
(cd "$OUT" && tar czf ncu_all.tgz --remove-files ./*.csv ./*.log) ; ls -la "$OUT"
