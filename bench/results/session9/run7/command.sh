set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
echo "== CUDA tests ($SECONDS s)"
timeout 70 python -m pytest -q -x tests/granite/test_fast_layer.py -k "decode_cuda_graph or real_config or stream" -p no:warnings > $OUT/pytest_cuda.log 2>&1; echo "rc=$?"; tail -2 $OUT/pytest_cuda.log
echo "== granite verify ($SECONDS s)"
timeout 70 python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py --json "$OUT/granite_verify.json" \
  > "$OUT/granite_verify.log" 2>&1; echo "rc=$?"; tail -1 "$OUT/granite_verify.log"
echo "== granite bench ($SECONDS s)"
timeout 110 python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py --json "$OUT/granite_bench.json" \
  --plot "$OUT/granite_bench.png" 2>&1 | grep -v "Warn\|warn(" | tail -10
echo "== granite profile ($SECONDS s)"
timeout 60 python bench/granite_profile.py --calls 20 --out "$OUT/granite_profile.json" 2>&1 | grep -v "Warn\|warn(" | grep -E "^==|GPU sum" | head -20
echo "== granite judge v13 ($SECONDS s)"
timeout 270 python -m ssmkit.cli granite judge --candidate experiments/granite/versions/v13/candidate.py --json "$OUT/granite_judge.json" 2>&1 | grep -v "Warn\|warn(" | tail -10
echo "== done ($SECONDS s)"
