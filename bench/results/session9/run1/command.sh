set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
echo "== CUDA tests ($SECONDS s)"
timeout 300 python -m pytest -q -x tests/granite/test_fast_layer.py -k "decode or stream or clear_graphs" -p no:warnings > $OUT/pytest_cuda.log 2>&1; echo "rc=$?"; tail -3 $OUT/pytest_cuda.log
timeout 200 python -m pytest -q -x tests/kernels/common tests/mamba3/test_graph_cuda.py -p no:warnings >> $OUT/pytest_cuda.log 2>&1; echo "rc=$?"; tail -3 $OUT/pytest_cuda.log
echo "== decode A/B ($SECONDS s)"
timeout 300 python bench/granite_decode_ab.py --side h=ssmkit_h --side new=ssmkit --side nopdl='ssmkit:{"decode_pdl": false}' \
  --side tri='ssmkit:{"decode_projections": "triton"}' --out $OUT --calls 300 2>&1 | tee $OUT/decode_ab.log | grep -v Warn
echo "== done ($SECONDS s)"
