#!/usr/bin/env bash
# Nsight Compute pass over the kernels of bench/ncu_profile.py (H200, Firecracker runtime: ncu reads counters there;
# clocks left alone). Writes under $OUT: kernels_details.csv (per kernel: speed of light, occupancy, launch,
# warp states, memory and compute workload, instruction stats), kernels_raw.csv (every collected metric), and for
# the Mamba-3 backward body and the Granite chunk kernels a source-line table (SourceCounters).
# SOURCE_KERNELS picks the kernels of the source-line pass (Mamba-3 kernels, names starting with _m3, run on
# mamba3_c1, the others on granite_varlen).
# Usage (CUDA): OUT=dir TARGETS=granite_l16384,mamba3_c1 SOURCE_KERNELS=_m3b_qside_kernel bash bench/ncu_run.sh
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
SOURCE_KERNELS=${SOURCE_KERNELS:-_m3b_qside_kernel,_ssd_chunk_scan_kernel,_ssd_chunk_state_kernel,_conv1d_silu_kernel}
for k in ${SOURCE_KERNELS//,/ }; do
  "$NCU" --clock-control none --profile-from-start off --section SourceCounters -k "$k" -c 1 -o "$OUT/src_$k" -f \
    python bench/ncu_profile.py --targets "$( [[ $k == _m3* ]] && echo mamba3_c1 || echo granite_varlen )" \
    > "$OUT/ncu_src_$k.log" 2>&1 || echo "ncu source pass $k failed"
  "$NCU" --import "$OUT/src_$k.ncu-rep" --page source --csv --print-source cuda > "$OUT/source_$k.csv" 2>&1 \
    || "$NCU" --import "$OUT/src_$k.ncu-rep" --page source --csv > "$OUT/source_$k.csv" 2>&1
  rm -f "$OUT/src_$k.ncu-rep"
done
(cd "$OUT" && tar czf ncu_all.tgz --remove-files ./*.csv ./*.log) ; ls -la "$OUT"
