# session 11 run 1 (commit 5d088d5): the three experiment branches' ssd_prefill.py against main, same process
for b in main:main exp/ssd-pass-two-ahead:pass2 exp/ssd-scan-pipelined:scanpipe exp/ssd-state-chunk-end-weights:stateend; do
  mkdir -p bench/_ab/${b#*:} && git show ${b%%:*}:src/ssmkit/kernels/granite/ssd_prefill.py > bench/_ab/${b#*:}/ssd_prefill.py; done
# device (carry bench/_ab/{main,pass2,scanpipe,stateend}):
export SSMKIT_GIT_COMMIT=5d088d5
PYTHONPATH=src python bench/granite_ssd_ab.py --baseline bench/_ab/main bench/_ab/pass2 bench/_ab/scanpipe bench/_ab/stateend --out $OUT
