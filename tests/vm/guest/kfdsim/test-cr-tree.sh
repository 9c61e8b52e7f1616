#!/bin/sh
# Checkpoint/restore of a process tree: --fork, a parent and a child that
# each opened /dev/kfd (two KFD processes, each with BOs of every type,
# queues, events and its own render fds). CRIU dumps the tree by its root.
# After the restore: both alive with their pids, each with exactly its own
# fds and user gpu_ids; both self-checks PASS (RESULT: PASS, "parent PASS",
# "child PASS"); each process's BO contents were handed to the CRIU
# master's copier and written by it (parallel restore, the default, for a
# tree as for one process).
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
GPU_CHILD=1
if ! gpu_start tree --mmio --fork --render-fds; then
	fail "tree: workload ready"
	tap_done
	exit
fi
pid=$WL_PID
child=$(gpu_child_pid)
check "tree: a child $child, ready" eval '[ -n "$child" ] && alive "$child" && test -f "$R.ready.child"'
check "tree: two KFD processes" eval '[ "$(grep -c . /sys/kernel/debug/kfdsim/processes)" = 2 ]'
check "tree: parent's /proc/PID/fd is what it listed" gpu_fds_ok "$pid" "$R.ready"
check "tree: child's /proc/PID/fd is what it listed" gpu_fds_ok "$child" "$R.ready.child"
cids=$(kfd_user_ids "$child")

# both processes' contents went through the master's copier (restore log)
copier_wrote_both() {
	local p
	for p in "$pid" "$child"; do
		grep -q "amdgpu_plugin: pid $p: BO contents handed to the master's copier" \
			"$WORK/img/restore.log" || return 1
		grep -qE "amdgpu_plugin: pid $p: the master's BO copier wrote [0-9]+ MiB" \
			"$WORK/img/restore.log" || return 1
	done
}

if gpu_dump_restore tree "$WORK/img" "$pid"; then
	check "tree: the master's copier wrote the BO contents of both ($pid, $child)" \
		copier_wrote_both
	check "tree: the child's KFD process has its user gpu_ids ($cids)" \
		eval '[ -n "$cids" ] && [ "$(kfd_user_ids "$child")" = "$cids" ]'
	check "tree: probe of both PASS" gpu_probe 1
fi
gpu_finish tree "$pid" "$child"
check "tree: result has parent PASS and child PASS" eval 'grep -qx "parent PASS" "$R.result" && grep -qx "child PASS" "$R.result"'
tap_done
