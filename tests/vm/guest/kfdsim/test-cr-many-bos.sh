#!/bin/sh
# Checkpoint/restore with many BOs: --bos 120 (600 BOs more: VRAM, GTT,
# USERPTR, DOORBELL, MMIO_REMAP, 4 KiB .. 252 KiB, mapped on no GPU, their
# own, own + next, all) on every GPU, render fds checked; then, when the
# guest has the RAM (kfdsim's shmem helper allocates a whole BO at mmap; the
# image holds it too: run with VM_MEM=12288), one VRAM BO over 4 GiB (--big-bo, sparse pattern:
# first, last and 62 spread pages written, pages between must stay zero).
# After each restore the full self-check must PASS.
#
# EXPECT=ok: the plugin dumps and restores KFD processes (since 0a4fdd8).
# EXPECT=fail: for a plugin that does not: each dump must then be refused
# cleanly (the plugin took part, CRIU names a /dev/kfd or render-node fd or
# mapping, the tree keeps running and its self-check PASSes).
# vm-timeout: 300
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

big=${GPU_BIG_BO:-4352M}
need_kb=$(( (${big%M} * 2 + 512) * 1024 )) # the BO, and its contents in the image (tmpfs)
avail_kb=$(sed -n 's/^MemAvailable: *\([0-9]*\) kB/\1/p' /proc/meminfo)
if [ "$avail_kb" -lt "$need_kb" ]; then
	ok "big: --big-bo $big # SKIP MemAvailable $avail_kb kB < $need_kb kB (VM_MEM)"
elif GPU_READY_SECS=300 gpu_start big --mmio --gpus 1 --big-bo "$big"; then
	pid=$WL_PID
	check "big: the big BO is there" grep -q '^bigbo ' "$R.ready"
	CRIU_TIMEOUT=600 gpu_dump_restore big "$WORK/img-big" "$pid"
	gpu_finish big "$pid"
else
	fail "big: workload ready"
fi
tap_done
