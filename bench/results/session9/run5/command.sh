set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
W=prefill_b1_l4096,prefill_b1_l16384,prefill_varlen_b8
echo "== CUDA tests ($SECONDS s)"
timeout 200 python -m pytest -q -x tests/granite/test_fast_layer.py -k "cuda or prefill" -p no:warnings > $OUT/pytest_cuda.log 2>&1; echo "rc=$?"; tail -3 $OUT/pytest_cuda.log
for rep in 1 2; do
for g in false true; do
echo "== profile fuse_gate=$g rep $rep ($SECONDS s)"
timeout 100 python bench/granite_profile.py --calls 20 --workloads $W --set "{\"fuse_gate\": $g}" --out "$OUT/profile_gate_${g}_$rep.json" 2>&1 | grep -v "Warn\|warn(" | grep -E "^==|GPU sum|scan|norm" | head -40
done
done
echo "== granite verify ($SECONDS s)"
timeout 150 python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py --json "$OUT/granite_verify.json" \
  > "$OUT/granite_verify.log" 2>&1; echo "rc=$?"; tail -2 "$OUT/granite_verify.log"
echo "== done ($SECONDS s)"
