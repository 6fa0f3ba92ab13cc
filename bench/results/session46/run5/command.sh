#!/usr/bin/env bash
# Session 46 run 5 (inline, on the H100 run 4 left warm; 19 s): the bench's own case measurement at c1 x4, three times
# in one process: with the float64 oracle replaced by the op itself (no oracle memory), with the oracle, and replaced
# again. Question: does the oracle's memory (the bench's correctness step, which the wall-gap script skips) make the
# bench's wall gap at 4x? Output transcribed to out/measure_case_x4.json.
cd bench && PYTHONPATH=../src timeout 200 python -c "
import torch, mamba3_bench as mb
dev = torch.device('cuda')
c = mb.named_cases('c1_four_mixed', '4')[0]
real = mb.float64_results
for label, patch in (('no_oracle', True), ('oracle', False), ('no_oracle_again', True)):
    mb.float64_results = (lambda a: [x.double() for x in mb.mamba3_siso_varlen_joint_states_full_vjp(**a)]) if patch else real
    torch.cuda.reset_peak_memory_stats()
    r = mb.measure_case(c['name'], c['seqlens'], c['seed'], dev, True)
    print(label, 'full wall %.3f queued %.3f gap %.3f reserved %.0f MiB peak %.0f MiB' % (r['wall_ms']['full'], r['queued_ms']['full'], r['wall_ms']['full'] - r['queued_ms']['full'], torch.cuda.memory_reserved() / 2**20, torch.cuda.max_memory_allocated() / 2**20), flush=True)
" 2>&1 | grep -v -i warn | tail -5
