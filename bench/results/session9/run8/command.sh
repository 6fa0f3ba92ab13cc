set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
echo "== Granite CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -x tests/granite/test_fast_layer.py -k "cuda or stream or real_config or clear_graphs" -p no:warnings > $OUT/pytest_cuda.log 2>&1; echo "rc=$?"; tail -2 $OUT/pytest_cuda.log
echo "== common + Mamba-3 graph CUDA tests ($SECONDS s)"
timeout 150 python -m pytest -q -x tests/kernels/common tests/mamba3/test_graph_cuda.py -p no:warnings >> $OUT/pytest_cuda.log 2>&1; echo "rc=$?"; tail -2 $OUT/pytest_cuda.log
echo "== decode A/B ($SECONDS s)"
timeout 100 python bench/granite_decode_ab.py --side s9=ssmkit_s9 --side new=ssmkit --out $OUT --calls 200 2>&1 | tee $OUT/decode_ab.log | grep -v Warn
echo "== done ($SECONDS s)"
