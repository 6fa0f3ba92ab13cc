#!/usr/bin/env bash
# Session 46 run 6 (inline, on the same warm H100; 6 s): how late the host gets back after a long GPU wait. One
# torch.cuda._sleep kernel of 0.05 / 0.4 / 1.6 / 3.2 ms, 40 times each from an idle GPU: host time from launch to
# return minus the kernel's event time, returning by torch.cuda.synchronize() or by polling the end event.
# Output transcribed to out/sync_return.json (the trailing cpufreq read failed: rc 1).
PYTHONPATH=src timeout 120 python -c "
import torch, time, statistics as st
x = torch.ones(1, device='cuda'); torch.cuda.synchronize()
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
def cyc(ms):
    s.record(); torch.cuda._sleep(1000000); e.record(); torch.cuda.synchronize(); return int(1000000 * ms / s.elapsed_time(e))
for ms in (0.05, 0.4, 1.6, 3.2):
    n = cyc(ms)
    for mode in ('sync', 'poll'):
        gaps = []
        for i in range(40):
            torch.cuda.synchronize()
            t0 = time.perf_counter(); s.record(); torch.cuda._sleep(n); e.record()
            if mode == 'sync': torch.cuda.synchronize()
            else:
                while not e.query(): pass
            t1 = time.perf_counter()
            gaps.append((t1 - t0) * 1e3 - s.elapsed_time(e))
        print('gpu %.2f ms %s: wall - gpu median %.4f ms, p90 %.4f' % (ms, mode, st.median(gaps), sorted(gaps)[35]), flush=True)
" 2>&1 | tail -8; cat /proc/cpuinfo | grep MHz | head -3; cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null
