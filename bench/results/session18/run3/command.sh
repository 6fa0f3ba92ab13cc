#!/usr/bin/env bash
# Session 18 run 3: where the side kernel's LSU wavefronts go (shared vs global vs local, loads vs stores, bank
# conflicts), and the same for the intra and chain kernels: one c1 call, graphs off (bench/ncu_profile.py).
set -u
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
"$NCU" --clock-control none --profile-from-start off --metrics "$M" \
  -k regex:'_m3b_sides_kernel|_m3b_intra_kernel|_m3b_dstate_kernel' --csv --page raw \
  python bench/ncu_profile.py --targets mamba3_c1 > $OUT/lsu_split.csv 2> $OUT/ncu.log
tail -3 $OUT/ncu.log
python - "$OUT/lsu_split.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 5]
hdr = rows[0]
for r in rows[2:]:
    print(r[hdr.index("Kernel Name")][:24])
    for h, v in zip(hdr, r):
        if h.startswith(("l1tex", "smsp", "gpu__")):
            print(f"   {h:70s} {v}")
PY
