set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
echo "== granite SSD A/B ($SECONDS s)"
timeout 300 python bench/granite_ssd_ab.py --baseline bench/_ab/g_ssd_base --out $OUT 2>&1 | tee $OUT/ssd_ab.log | grep -v "Warn\|warn("
echo "== done ($SECONDS s)"
