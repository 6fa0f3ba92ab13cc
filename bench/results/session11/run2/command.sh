# session 11 run 2 (5d088d5 + the first form of bench/granite_call_gap.py, same method as the committed one:
# calls one at a time under torch.profiler, lead / span / kernel sum / gaps):
export SSMKIT_GIT_COMMIT=5d088d5+callgap PYTHONPATH=src
python bench/granite_call_gap.py --calls 20 --out $OUT/call_gap_default.json
python bench/granite_call_gap.py --calls 20 --workloads prefill_b1_l4096,prefill_b1_l16384 --set '{"prefill_graphs": "whole"}' --out $OUT/call_gap_whole.json
