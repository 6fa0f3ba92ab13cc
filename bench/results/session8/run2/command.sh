set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
echo "== mamba3 A/B: base -> interleaved sides -> + sides reversed -> + scan reversed ($SECONDS s)"
timeout 420 python bench/mamba3_ab.py --baseline bench/_ab/m3_base --baseline bench/_ab/m3_inter --baseline bench/_ab/m3_rev \
  --out $OUT --cases c1_four_mixed,c4_short_and_longest,c8_small_three,c3_five_mixed 2>&1 | tee $OUT/ab.log | grep -v "Warn\|warn("
echo "== done ($SECONDS s)"
