set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
commit="${SSMKIT_GIT_COMMIT:-unknown}"
step() { echo "== $1 ($SECONDS s)"; }
step "mamba3 graph A/B (direct -> graph)"
timeout 150 python bench/mamba3_ab.py --graph --out $OUT 2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json"
step "mamba3 bench (defaults, scales 1,2,4)"
timeout 170 python bench/mamba3_bench.py --out "$OUT" --commit "$commit" --scales 1,2,4 2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|targets|json:|worst|error" | head -40
step "mamba3 selfcheck (fast op)"
timeout 120 python -m ssmkit.cli mamba3 selfcheck --json "$OUT/mamba3_selfcheck.json" 2>&1 | tail -14
step "mamba3 judge (experiments v9)"
timeout 130 python -m ssmkit.cli mamba3 judge --solver experiments/mamba3/versions/v9/solver.py --json "$OUT/mamba3_judge.json" 2>&1 | tail -14
step done
