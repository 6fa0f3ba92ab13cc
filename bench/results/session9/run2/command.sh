set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
echo "== projections, weights from HBM ($SECONDS s)"
timeout 330 python bench/granite_decode_linear_bench.py --out $OUT --batches 1,2,8,64 --rotate 4 2>&1 | tee $OUT/linear_r4.log | grep -v Warn
echo "== projections, one weight (L2) ($SECONDS s)"
timeout 200 python bench/granite_decode_linear_bench.py --out $OUT --batches 1,8,64 --rotate 1 2>&1 | tee $OUT/linear_r1.log | grep -v Warn
echo "== done ($SECONDS s)"
