#!/bin/sh
# Checkpoint/restore with many BOs: --bos 120 (600 BOs more: VRAM, GTT,
# USERPTR, DOORBELL, MMIO_REMAP, 4 KiB .. 252 KiB, mapped on no GPU, their
# own, own + next, all) on every GPU, render fds checked. After the restore
# the full self-check must PASS. (One VRAM BO over 4 GiB: test-cr-big-bo.sh.)
#
# EXPECT=ok: the plugin dumps and restores KFD processes (since 0a4fdd8).
# EXPECT=fail: for a plugin that does not: each dump must then be refused
# cleanly (the plugin took part, CRIU names a /dev/kfd or render-node fd or
# mapping, the tree keeps running and its self-check PASSes).
# vm-boot: cr
# vm-timeout: 180
EXPECT=ok
. /test/lib/guest.sh

gpu_wl_missing && { tap_done; exit; }
kfdsim_debugfs || diag "no kfdsim debugfs"
if gpu_start many --mmio --bos 120 --render-fds; then
	pid=$WL_PID
	check "many: over 600 BOs" eval '[ "$(sed -n "s/^gpus [0-9]* bos \([0-9]*\) .*/\1/p" "$R.ready")" -gt 600 ]'
	check "many: /proc/PID/fd is what the workload listed" gpu_fds_ok "$pid" "$R.ready"
	gpu_dump_restore many "$WORK/img-many" "$pid"
	gpu_finish many "$pid"
else
	fail "many: workload ready"
fi
tap_done
