set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
echo "== SSD A/B ($SECONDS s)"
timeout 150 python bench/granite_ssd_ab.py --baseline bench/_ab/g_ssd_s10base --out $OUT 2>&1 | grep -v "Warn\|warn("
echo "== granite verify ($SECONDS s)"
timeout 90 python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py --json "$OUT/granite_verify.json" \
  > "$OUT/granite_verify.log" 2>&1; echo "rc=$?"; tail -3 "$OUT/granite_verify.log"
echo "== granite profile ($SECONDS s)"
timeout 90 python bench/granite_profile.py --calls 20 --out "$OUT/granite_profile.json" 2>&1 | grep -v "Warn\|warn(" | grep -E "^==|GPU sum|ssd" | head -30
echo "== done ($SECONDS s)"
