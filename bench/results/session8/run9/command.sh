set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=src
echo "== mamba3 graph: one stream -> forked side streams ($SECONDS s)"
timeout 200 python bench/mamba3_ab.py --graph-streams --out $OUT 2>&1 | grep -v "Warn\|warn(" | grep -E "^c[0-9]|json|   "
echo "== done ($SECONDS s)"
