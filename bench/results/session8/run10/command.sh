set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
echo "== decode A/B: HEAD -> copy-in inside the fetch up to 16384 elements ($SECONDS s)"
timeout 200 python bench/granite_decode_ab.py --side head=ssmkit_h --side new=ssmkit --side head2=ssmkit_h --side new2=ssmkit --out $OUT --calls 400 2>&1 | grep -v "Warn\|warn("
echo "== CUDA mapped-io tests ($SECONDS s)"
timeout 100 python -m pytest -q -x -p no:warnings tests/kernels/common tests/granite/test_fast_layer.py -k "copy or decode or mapped or post or gather or slot" 2>&1 | tail -2
echo "== done ($SECONDS s)"
