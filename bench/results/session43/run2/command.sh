#!/usr/bin/env bash
# Session 43 run 2 (device, one call; carry [".anchors"] made by `bash bench/anchor_setup.sh vllm`):
# 1. `mamba3 judge` of experiments v33 (main's Mamba-3 code as one file: v31 with the three programmatic dependent
# launches of sessions 41-42) in its isolated worker; 2. `mamba3 selfcheck` of the tree; 3. issue 5's Granite fast
# layer against the vLLM-kernel layer in one process (session 35's run 7 again: the Granite code is unchanged since,
# the harness and the shared kernels' modules are not).
# Prediction: 1-2 PASS; G near v31's 28.60 (session 39, H100) times ~1.02 for the launches' -6 to -15 us per call (G
# moves with the eager reference's time on the host, so only a same-call comparison would say more); 3. the fast
# layer ahead on all six workloads by 1.1-1.4x, as in session 35 (1.13-1.37x on an H100).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
W=/tmp/s43r2; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee $W/gpu.txt
echo "${SSMKIT_GIT_COMMIT:-unknown}" > $W/commit.txt
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee $W/versions.txt
echo "bash bench/results/session43/run2/command.sh" > $W/command.txt
cat .anchors/vllm_ops/REVISION > $W/vllm_revision.txt
pack() { tar czf "$OUT/run2.tgz" -C $W .; }
cap() { local left=$((${BUDGET:-585} - SECONDS)); [ $left -lt 1 ] && left=1; [ $left -lt $1 ] && echo $left || echo $1; }
echo "== judge v33 ($SECONDS s)"
timeout $(cap 300) python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v33/solver.py \
  --json $W/judge_v33.json > $W/judge_v33.log 2>&1; echo "rc=$?"; tail -12 $W/judge_v33.log; pack
echo "== selfcheck ($SECONDS s)"
timeout $(cap 200) python -m ssmkit.cli mamba3 selfcheck --json $W/selfcheck.json > $W/selfcheck.log 2>&1
echo "rc=$?"; tail -8 $W/selfcheck.log
pack
echo "== Granite: the fast layer against the vLLM-kernel layer, same process ($SECONDS s)"
timeout $(cap 200) python bench/granite_candidate_ab.py --a candidates/granite_fast.py \
  --b bench/granite_vllm_candidate.py --out $W/granite_candidate_ab.json > $W/granite_candidate_ab.log 2>&1
echo "rc=$?"; grep -v -i "warn\|Using default" $W/granite_candidate_ab.log | tail -12; pack
echo "== done ($SECONDS s)"
