#!/bin/sh
# Checkpoint/restore of a process that uses one GPU (--gpus 1) of the
# machine's visible GPUs (KFD still gives it a pdd for each: the image must
# carry them all): BOs of every type, an AQL queue with its doorbell mapped,
# the MMIO page mapped, events, its render-node fd kept open (--render-fds).
# After the restore: same pid, exactly its own fds, the same user gpu_ids in
# its KFD process; the self-check (bytes, doorbell and MMIO writes, fds,
# apertures, render fd = amdgpu node of the GPU behind the user id, a fresh
# BO through it, events, queues, mappings, handles) must PASS.
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
if ! gpu_start one --mmio --gpus 1 --render-fds; then
	fail "one: workload ready"
	tap_done
	exit
fi
pid=$WL_PID
check "one: uses one GPU" grep -q '^gpus 1 ' "$R.ready"
check "one: /proc/PID/fd is what the workload listed" gpu_fds_ok "$pid" "$R.ready"
gpu_dump_restore one "$WORK/img" "$pid"
gpu_finish one "$pid"
tap_done
