# session 11 run 7 (commit 94ba782: fused_state by default from 384 programs): Granite CUDA tests, the layer on the
# left-padded B=8 batch with the fused-state form off and on (same process order, one after the other), granite bench
export SSMKIT_GIT_COMMIT=94ba782 PYTHONPATH=src
python -m pytest -q --tb=short -p no:warnings tests/granite/test_fast_layer.py tests/kernels/granite > $OUT/pytest_cuda.log
for v in false null; do python bench/granite_profile.py --workloads prefill_varlen_b8 --calls 20 --set "{\"ssd_fused_state\": $v}" --out $OUT/profile_varlen_fused_$v.json; done
python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py --json $OUT/granite_bench.json
