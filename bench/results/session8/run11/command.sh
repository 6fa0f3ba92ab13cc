set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
echo "== CUDA tests: fast layer decode + mapped io ($SECONDS s)"
timeout 200 python -m pytest -q -p no:warnings tests/granite/test_fast_layer.py -k "decode or clear_graphs or alternating" 2>&1 | tail -3
timeout 100 python -m pytest -q -p no:warnings tests/kernels/common 2>&1 | tail -2
echo "== decode A/B HEAD -> stream guard ($SECONDS s)"
timeout 150 python bench/granite_decode_ab.py --side head=ssmkit_h --side new=ssmkit --out $OUT --calls 300 2>&1 | grep -v "Warn\|warn("
echo "== done ($SECONDS s)"
