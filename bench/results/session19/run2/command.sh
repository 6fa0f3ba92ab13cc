#!/usr/bin/env bash
# Session 19 run 2: run 1 measured the side kernel with split-bf16 dots (side_precision "bf16x3": no element-wise
# transposing stores, offline) no faster than tf32. Does its shared-store traffic fall? The LSU wavefront split of
# session 18 run 3 for the side kernel, default (tf32, cap 168) and bf16x3 uncapped, one c1 call each.
set -u
mkdir -p $OUT
export PYTHONPATH=src
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
M=l1tex__data_pipe_lsu_wavefronts.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,\
l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,\
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,\
l1tex__data_pipe_lsu_wavefronts_mem_shared_cmd_read.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_cmd_write.sum,\
l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,\
l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,\
l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum,\
smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,smsp__inst_executed_op_ldsm.sum,\
smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_global_st.sum,smsp__inst_executed.sum,gpu__time_duration.sum
for V in tf32:'{}' bf16x3:'{"side_precision": "bf16x3", "side_maxnreg": 0}'; do
  "$NCU" --clock-control none --profile-from-start off --metrics "$M" -k regex:'_m3b_sides_kernel' --csv --page raw \
    python bench/ncu_profile.py --targets mamba3_c1 --mamba3-bwd-config "${V#*:}" > $OUT/lsu_${V%%:*}.csv 2> $OUT/ncu_${V%%:*}.log
  tail -2 $OUT/ncu_${V%%:*}.log
done
python - $OUT/lsu_tf32.csv $OUT/lsu_bf16x3.csv <<'PY'
import csv, sys
cols = []
for path in sys.argv[1:]:
    rows = [r for r in csv.reader(open(path)) if len(r) > 5]
    cols.append(dict(zip(rows[0], rows[2])))
for h in cols[0]:
    if h.startswith(("l1tex", "smsp", "gpu__")):
        print(f"{h:70s} " + " ".join(f"{c[h]:>14s}" for c in cols))
PY
