set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
echo "== mamba3 A/B: m3_inter (879bdd0 kernels) -> half-size q~/k~ ($SECONDS s)"
timeout 300 python bench/mamba3_ab.py --baseline bench/_ab/m3_inter --out $OUT \
  --cases c1_four_mixed,c2_three_long,c3_five_mixed,c4_short_and_longest,c8_small_three 2>&1 | tee $OUT/ab.log | grep -v "Warn\|warn("
echo "== mamba3 CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -x -p no:warnings tests/mamba3/test_graph_cuda.py tests/mamba3/test_kernels_op.py > $OUT/pytest_cuda.log 2>&1; echo "rc=$?"; tail -3 $OUT/pytest_cuda.log
echo "== done ($SECONDS s)"
