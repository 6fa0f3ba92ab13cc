set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
echo "== CUDA tests ($SECONDS s)"
timeout 300 python -m pytest -q -x tests/granite/test_fast_layer.py -k "decode or stream or clear_graphs" -p no:warnings > $OUT/pytest_cuda.log 2>&1; echo "rc=$?"; tail -3 $OUT/pytest_cuda.log
timeout 200 python -m pytest -q -x tests/kernels/common tests/mamba3/test_graph_cuda.py -p no:warnings >> $OUT/pytest_cuda.log 2>&1; echo "rc=$?"; tail -3 $OUT/pytest_cuda.log
echo "== decode A/B ($SECONDS s)"
timeout 240 python bench/granite_decode_ab.py --side h=ssmkit_h --side new=ssmkit --out $OUT --calls 400 2>&1 | tee $OUT/decode_ab.log | grep -v Warn
echo "== decode profile ($SECONDS s)"
timeout 60 python bench/granite_profile.py --calls 20 --workloads decode_b1,decode_b8,decode_b64 --out "$OUT/granite_profile.json" 2>&1 | grep -v "Warn\|warn(" | grep -E "^==|GPU sum|us  x" | head -40
echo "== granite verify ($SECONDS s)"
timeout 150 python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py --json "$OUT/granite_verify.json" \
  > "$OUT/granite_verify.log" 2>&1; echo "rc=$?"; tail -2 "$OUT/granite_verify.log"
echo "== done ($SECONDS s)"
