#!/usr/bin/env bash
# Session 23 run 2: Nsight Compute on the Mamba-3 c1 call at today's kernels (session 18 run 1 profiled 1f0cbe7,
# before the bf16 splits of sessions 19-20): what binds each kernel now (sections of bench/ncu_run.sh, digested
# below), and where the side / intra kernels' LSU wavefronts go (session 18 run 3's metrics).
set -u
export PYTHONPATH=src
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
OUT=$OUT/ncu TARGETS=mamba3_c1 timeout 300 bash bench/ncu_run.sh > /dev/null 2>&1; ls $OUT/ncu
(cd $OUT/ncu && tar xzf ncu_all.tgz kernels_raw.csv)
python - "$OUT/ncu/kernels_raw.csv" <<'PY'
import csv, json, os, re, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 5]
hdr, units, data = rows[0], rows[1], rows[2:]
col = {h: i for i, h in enumerate(hdr)}
keys = {"us": "gpu__time_duration.sum", "sm%": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "issue%": "sm__inst_issued.avg.pct_of_peak_sustained_active",
        "l1%": "l1tex__throughput.avg.pct_of_peak_sustained_active",
        "l2%": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        "dram%": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "occ%": "sm__warps_active.avg.pct_of_peak_sustained_active",
        "lsu%": "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed",
        "cyc/inst": "smsp__average_warp_latency_per_inst_issued.ratio", "inst": "smsp__inst_executed.sum"}
stall = [h for h in hdr if re.fullmatch(r"smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio", h)]
out = {}
for r in data:
    name = r[col["Kernel Name"]][:28]
    d = {k: r[col[m]] for k, m in keys.items() if m in col}
    if "gpu__time_duration.sum" in col and units[col["gpu__time_duration.sum"]] == "ns":
        d["us"] = f"{float(d['us'].replace(',', '')) / 1000:.1f}"
    st = sorted(((float(r[col[h]].replace(',', '') or 0), h.split("stalled_")[1].split("_per")[0]) for h in stall),
                reverse=True)[:4]
    d["stalls"] = " ".join(f"{n}={v:.1f}" for v, n in st)
    out[f"{len(out)} {name}"] = d
    print(f"{name:28s} " + " ".join(f"{k}={v}" for k, v in d.items()))
json.dump({"command": "bench/results/session23/run2/command.sh", "git_commit": os.environ.get("SSMKIT_GIT_COMMIT"),
           "kernels": out}, open(os.path.join(os.path.dirname(sys.argv[1]), "ncu_digest.json"), "w"), indent=1)
PY
rm -f $OUT/ncu/kernels_raw.csv
