set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
echo "== decode A/B: state kernel pipelined ($SECONDS s)"
timeout 240 python bench/granite_decode_ab.py --side new=ssmkit \
  --side p2s3='ssmkit:{"decode_state_pipeline": [2, 3]}' --side p3s2='ssmkit:{"decode_state_pipeline": [3, 2]}' \
  --side p2s4='ssmkit:{"decode_state_pipeline": [2, 4]}' --side p1s4='ssmkit:{"decode_state_pipeline": [1, 4]}' \
  --side p4s2='ssmkit:{"decode_state_pipeline": [4, 2]}' --out $OUT --calls 300 2>&1 | grep -v "Warn\|warn("
echo "== done ($SECONDS s)"
