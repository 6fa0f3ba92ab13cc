#!/usr/bin/env bash
# Session 19 run 5 (device, one call): final measurement of the session's Mamba-3 code (transposed-operand dots of the
# intra kernel and the chain split into bf16, the default since 2596907).
# CUDA tests of the graph and sincos; judge of experiments v15 (exported at this commit); bench (fwd-only, bwd-only, full call at 1x / 2x / 4x lengths,
# errors against float64 and the official kernels' errors); selfcheck.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
OUT="${OUT:-out}"; mkdir -p "$OUT"
commit="${SSMKIT_GIT_COMMIT:-unknown}"
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -rfE tests/mamba3/test_graph_cuda.py tests/mamba3/test_sincos.py > "$OUT/pytest_cuda.log" 2>&1
echo "rc=$?"; tail -3 "$OUT/pytest_cuda.log"
echo "== mamba3 judge, experiments v15 ($SECONDS s)"
timeout 170 python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v15/solver.py \
  --json "$OUT/mamba3_judge.json" > "$OUT/mamba3_judge.log" 2>&1; echo "rc=$?"; tail -12 "$OUT/mamba3_judge.log"
echo "== mamba3 bench ($SECONDS s)"
timeout 220 python bench/mamba3_bench.py --out "$OUT" --commit "$commit" --scales 1,2,4 > "$OUT/mamba3_bench.log" 2>&1
echo "rc=$?"; grep -v "Warn\|warn(" "$OUT/mamba3_bench.log" | grep -E "^c[0-9]|targets|json:|worst|error" | head -40
echo "== mamba3 selfcheck ($SECONDS s)"
timeout 120 python -m ssmkit.cli mamba3 selfcheck --json "$OUT/mamba3_selfcheck.json" > "$OUT/mamba3_selfcheck.log" 2>&1
echo "rc=$?"; tail -12 "$OUT/mamba3_selfcheck.log"
tar czf "$OUT/logs.tgz" -C "$OUT" pytest_cuda.log mamba3_judge.log mamba3_bench.log mamba3_selfcheck.log

echo "== sweep: the side kernel's dots split with hi rounded, lo truncated ($SECONDS s)"
timeout 150 python bench/mamba3_config_sweep.py --out $OUT/sweep --cases c1_four_mixed,c4_short_and_longest \
  --configs '[{"side_precision": "bf16x3", "side_maxnreg": 0}, {"side_precision": "bf16x3"}, {"transposed_precision": "tf32"}]' > $OUT/sweep.log 2>&1
python - $OUT/sweep/mamba3_bwd_sweep.json <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    c, k = r["config"], r["kernels_ms"]
    print(f'{r["case"]:22s} side {c["side_precision"]:7s} cap {c["side_maxnreg"]:3d} transposed {c["transposed_precision"]:7s}'
          f' bwd {r["bwd_gpu_ms"]:.3f}  sides {k["_m3b_sides_kernel"]:.3f} intra {k["_m3b_intra_kernel"]:.3f}'
          f' chain {k["_m3b_dstate_kernel"]:.3f}  max diff {max(r["vs_default"].values()):.2e}')
PY

echo "== done ($SECONDS s)"
