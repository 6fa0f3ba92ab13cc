set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
echo "== SSD A/B: baseline, state change only, both; every launch variant ($SECONDS s)"
timeout 400 python bench/granite_ssd_ab.py --baseline bench/_ab/g_ssd_s10base bench/_ab/g_ssd_s10_state --variants all --out $OUT 2>&1 | grep -v "Warn\|warn(" | sed 's/  /\n   /g'
echo "== done ($SECONDS s)"
