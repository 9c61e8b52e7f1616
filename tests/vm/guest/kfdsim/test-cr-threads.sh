#!/bin/sh
# Checkpoint/restore of a multi-threaded GPU process: --threads 4, each
# worker thread owns BOs of every type on one GPU, a queue (AQL or SDMA, so
# SDMA ids are in the image too) and events, and re-verifies its own state
# concurrently with the others after the restore; the main thread has the
# usual per-GPU state and checks render fds. After the restore: all 5
# threads there, exactly the process's fds, its user gpu_ids; self-check PASS.
#
# EXPECT=ok: the plugin dumps and restores KFD processes (since 0a4fdd8).
# EXPECT=fail: for a plugin that does not: each dump must then be refused
# cleanly (the plugin took part, CRIU names a /dev/kfd or render-node fd or
# mapping, the tree keeps running and its self-check PASSes).
# vm-boot: cr
EXPECT=ok
. /test/lib/guest.sh

gpu_wl_missing && { tap_done; exit; }
kfdsim_debugfs || diag "no kfdsim debugfs"
if ! gpu_start threads --mmio --threads 4 --render-fds; then
	fail "threads: workload ready"
	tap_done
	exit
fi
pid=$WL_PID
check "threads: 5 threads" eval '[ "$(ls /proc/$pid/task | wc -l)" = 5 ]'
check "threads: /proc/PID/fd is what the workload listed" gpu_fds_ok "$pid" "$R.ready"
if gpu_dump_restore threads "$WORK/img" "$pid"; then
	check "threads: 5 threads after the restore" eval '[ "$(ls /proc/$pid/task | wc -l)" = 5 ]'
	check "threads: thread ids kept" eval 'for t in $(awk "\$1 == \"thread\" { print \$3 }" "$R.ready"); do test -d /proc/$pid/task/$t || exit 1; done'
fi
gpu_finish threads "$pid"
tap_done
