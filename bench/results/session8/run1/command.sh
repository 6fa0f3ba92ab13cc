set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
commit="${SSMKIT_GIT_COMMIT:-unknown}"
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -x tests/granite/test_fast_layer.py -k "decode or clear_graphs" -p no:warnings > $OUT/pytest_cuda.log 2>&1; echo "rc=$?"; tail -3 $OUT/pytest_cuda.log
timeout 100 python -m pytest -q -x tests/kernels/common -p no:warnings >> $OUT/pytest_cuda.log 2>&1; echo "rc=$?"; tail -3 $OUT/pytest_cuda.log
echo "== decode A/B ($SECONDS s)"
timeout 240 python bench/granite_decode_ab.py --side s7=ssmkit_s7 --side s6=ssmkit_s6 --side new=ssmkit \
  --side p2='ssmkit:{"decode_state_persist": 2}' --side p4='ssmkit:{"decode_state_persist": 4}' \
  --side p8='ssmkit:{"decode_state_persist": 8}' --out $OUT --calls 400 2>&1 | tee $OUT/decode_ab.log | grep -v Warn
echo "== granite verify ($SECONDS s)"
timeout 150 python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py --json "$OUT/granite_verify.json" \
  > "$OUT/granite_verify.log" 2>&1; echo "rc=$?"; tail -2 "$OUT/granite_verify.log"
echo "== done ($SECONDS s)"
