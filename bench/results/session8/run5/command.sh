set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
step() { echo "== $1 ($SECONDS s)"; }
step "granite judge (experiments v11)"
timeout 270 python -m ssmkit.cli granite judge --candidate experiments/granite/versions/v11/candidate.py --json "$OUT/granite_judge.json" 2>&1 | grep -v "Warn\|warn(" | tail -14
step "granite bench (defaults)"
timeout 110 python -m ssmkit.cli granite bench --candidate candidates/granite_fast.py --json "$OUT/granite_bench.json" \
  --plot "$OUT/granite_bench.png" 2>&1 | grep -v "Warn\|warn(" | tail -14
step "granite profile"
timeout 60 python bench/granite_profile.py --calls 20 --out "$OUT/granite_profile.json" 2>&1 | grep -v "Warn\|warn(" | grep -E "^==|GPU sum|us  x" | head -60
step "granite verify"
timeout 100 python -m ssmkit.cli granite verify --candidate candidates/granite_fast.py --json "$OUT/granite_verify.json" 2>&1 | tail -1
step done
