# session 11 run 6 (2b1f2f3 + the fused-state kernels, before fused_state became the default from 384 programs):
# the SSD launches alone (main's file against the working tree's fused-state variants), the layer profile with
# ssd_fused_state on, and granite verify of a candidate subclass with it on (bench/_ab/cand/granite_fused_state.py,
# git-ignored: FastMambaLayer with self.ssd_fused_state = True)
export SSMKIT_GIT_COMMIT=2b1f2f3+fused-wip PYTHONPATH=src
python bench/granite_ssd_ab.py --baseline bench/_ab/main --variants fused_n16_s2,fused_n32_s1,fused_n32_s2,fused_n32_s3,fused_n64_s2 --out $OUT
python bench/granite_profile.py --workloads prefill_b1_l4096,prefill_b1_l16384,prefill_varlen_b8 --calls 20 --set '{"ssd_fused_state": true}' --out $OUT/profile_fused.json
python -m ssmkit.cli granite verify --candidate bench/_ab/cand/granite_fused_state.py --json $OUT/verify_fused.json
