set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
echo "== decode A/B ($SECONDS s)"
timeout 240 python bench/granite_decode_ab.py --side h=ssmkit_h --side s9=ssmkit_s9 --side new=ssmkit --out $OUT --calls 400 2>&1 | tee $OUT/decode_ab.log | grep -v Warn
echo "== done ($SECONDS s)"
