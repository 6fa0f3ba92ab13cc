#!/usr/bin/env bash
# Session 13 run 1 (device, one call): the forward's own sincos (_fwd_sincos) instead of libdevice's sinf / cosf.
# Same-process A/B of the Mamba-3 kernels (bench/_ab/m3_head = HEAD's fwd.py + bwd.py; bench/_ab/m3_nocap = the
# working tree's with rotate_maxnreg 0), the Mamba-3 CUDA tests (sincos compiled, graph replays), selfcheck.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
echo "== mamba3 A/B ($SECONDS s)"
timeout 240 python bench/mamba3_ab.py --baseline bench/_ab/m3_head --baseline bench/_ab/m3_nocap --out "$OUT" \
  > "$OUT/mamba3_ab.log" 2>&1; echo "rc=$?"; grep -v "Warn\|warn(" "$OUT/mamba3_ab.log" | tail -40
echo "== mamba3 CUDA tests ($SECONDS s)"
timeout 150 python -m pytest -q -p no:warnings tests/mamba3/test_sincos.py tests/mamba3/test_graph_cuda.py \
  > "$OUT/pytest_cuda.log" 2>&1; echo "rc=$?"; grep -E "passed|failed|FAILED|Error" "$OUT/pytest_cuda.log" | tail -5
echo "== mamba3 selfcheck ($SECONDS s)"
timeout 150 python -m ssmkit.cli mamba3 selfcheck --json "$OUT/mamba3_selfcheck.json" > "$OUT/selfcheck.log" 2>&1
echo "rc=$?"; tail -16 "$OUT/selfcheck.log"
tar czf "$OUT/logs.tgz" -C "$OUT" mamba3_ab.log pytest_cuda.log selfcheck.log
echo "== done ($SECONDS s)"
