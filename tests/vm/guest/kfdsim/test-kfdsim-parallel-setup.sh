#!/bin/sh
# Threads of one process set up their GPU state at the same time
# (zdtm-gpu-basic --threads 8 --parallel-setup): USERPTR ALLOCs (process
# mutex, then mmap_lock) meet doorbell and event mmaps (mmap_lock held).
# KFD takes no process lock in its mmap path; a simulator that did would
# deadlock here (ABBA), which this test sees as a workload that never gets
# ready. Several rounds, as the window is narrow; each must reach READY and
# PASS its self-check. No checkpoint.
# vm-timeout: 420
. /test/lib/guest.sh

ROUNDS=6
gpu_wl_missing && { tap_done; exit; }
r=1
while [ $r -le $ROUNDS ]; do
	if ! GPU_READY_SECS=45 gpu_start "par$r" --mmio --threads 8 --parallel-setup; then
		fail "round $r: 9 threads set up in parallel, READY"
		diag "blocked tasks: $(grep -l '^State:.*D' /proc/[0-9]*/task/*/status 2>/dev/null | head -5 | tr '\n' ' ')"
		[ -z "${WL_PID:-}" ] || kill -9 "$WL_PID" 2>/dev/null
		break
	fi
	ok "round $r: 9 threads set up in parallel, READY"
	gpu_finish "par$r" "$WL_PID"
	r=$((r + 1))
done
tap_done
