# session 11 run 4 (commit 0520c58): the Granite final measurement (CUDA tests, verify, judge of the export, bench, profile)
export SSMKIT_GIT_COMMIT=0520c58
OUT=$OUT bash bench/final_gpu_run.sh
# pytest_cuda.log did not come back (file count); its tail: rc=1, FAILED test_mapped_prefill_fills_given_caches_cuda and
# test_fast_prefill_cuda_graph_matches_eager_and_returns_fresh_outputs (a Triton compile error of the chunk scan at
# chunk_size 16, see run 5 and bench/granite/NOTES.md "Session 11")
