#!/bin/sh
# Three checkpoint/restore cycles of one GPU process (--render-fds): after
# each restore the process is probed (non-destructive self-check: bytes,
# doorbell and MMIO writes, fds, apertures = the same actual gpu_ids, each
# render fd still the node of its user gpu_id, a fresh BO per GPU whose
# handle carries the original user id), and its KFD process must keep the
# original user gpu_ids; the full self-check after the third must PASS.
#
# EXPECT=ok: the plugin dumps and restores KFD processes (since 0a4fdd8).
# EXPECT=fail: for a plugin that does not: each dump must then be refused
# cleanly (the plugin took part, CRIU names a /dev/kfd or render-node fd or
# mapping, the tree keeps running and its self-check PASSes).
# vm-boot: cr
# vm-timeout: 240
EXPECT=ok
. /test/lib/guest.sh

gpu_wl_missing && { tap_done; exit; }
kfdsim_debugfs || diag "no kfdsim debugfs"
if ! gpu_start repeat --mmio --render-fds; then
	fail "repeat: workload ready"
	tap_done
	exit
fi
pid=$WL_PID
ids=$(kfd_user_ids "$pid")
check "repeat: /proc/PID/fd is what the workload listed" gpu_fds_ok "$pid" "$R.ready"
for i in 1 2 3; do
	rm -f "$R.trigger.probe" # no probe file read by the restored process during the fd check
	if gpu_dump_restore "cycle $i" "$WORK/img$i" "$pid"; then
		check "cycle $i: probe of the restored process PASS" gpu_probe "$i"
		check "cycle $i: user gpu_ids still the original ones ($ids)" \
			eval '[ "$(kfd_user_ids "$pid")" = "$ids" ]'
	else
		check "cycle $i: probe after the refused dump PASS" gpu_probe "$i"
	fi
done
gpu_finish repeat "$pid"
tap_done
