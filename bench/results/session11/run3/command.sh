# session 11 run 3 (5d088d5 + bench/granite_call_gap.py as committed, with host marks):
export SSMKIT_GIT_COMMIT=5d088d5+callgap PYTHONPATH=src
python bench/granite_call_gap.py --calls 20 --out $OUT/call_gap_marks.json
