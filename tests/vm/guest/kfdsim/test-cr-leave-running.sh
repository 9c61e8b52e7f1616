#!/bin/sh
# criu dump --leave-running of a GPU process (--render-fds): the original
# must keep running and working (not paused in KFD, exactly its fds, a probe
# of its non-destructive self-check PASS); then it is killed, its KFD process
# must go away, and the image restored: the restored process must have its
# fds and user gpu_ids, pass a probe and the full self-check.
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
if ! gpu_start lr --mmio --render-fds; then
	fail "lr: workload ready"
	tap_done
	exit
fi
pid=$WL_PID
ids=$(kfd_user_ids "$pid")
img=$WORK/img
criu_dump "$img" "$pid" --leave-running
rc=$?
if [ "$EXPECT" = fail ]; then
	gpu_expect_refusal lr "$rc" "$img" "$pid"
	check "lr: probe after the refused dump PASS" gpu_probe 1
else
	check "lr: dump --leave-running (status $rc)" test "$rc" -eq 0
	check "lr: the original still runs" alive "$pid"
	check "lr: the original is not paused in KFD" \
		eval 'grep -q "^pid=$pid paused=0 " /sys/kernel/debug/kfdsim/processes'
	check "lr: the original has exactly its fds" gpu_fds_ok "$pid" "$R.ready"
	check "lr: probe of the original PASS" gpu_probe 1
	kill -9 "$pid"
	check "lr: the original killed" gpu_gone "$pid"
	check "lr: its KFD process gone" wait_until 10 kfd_no_processes
	rm -f "$R.trigger.probe" "$R.result.probe"
	criu_restore "$img"
	rc=$?
	check "lr: restore (status $rc)" test "$rc" -eq 0
	gpu_restored lr "$pid" "$R.ready"
	check "lr: user gpu_ids of the restored process ($ids)" eval '[ "$(kfd_user_ids "$pid")" = "$ids" ]'
	check "lr: probe of the restored process PASS" gpu_probe 2
fi
gpu_finish lr "$pid"
tap_done
