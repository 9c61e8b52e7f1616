#!/bin/sh
# Checkpoint/restore of a process with one VRAM BO over 4 GiB (GPU_BIG_BO,
# default 4160M = 4 GiB + 64 MiB; --big-bo: its first and last page and 62
# pages spread over it written, all others zero) on one GPU, and a worker
# thread (--threads 1) whose BOs on that GPU come after the big one in the
# GPU's image (offsets above 4 GiB). kfdsim's shmem helper backs the whole
# BO with RAM at mmap; the image is sparse (datapath/bo_stream.c leaves zero
# pages as holes), so the guest needs the BO's size once, not twice (guest
# /tmp is RAM). SKIP when MemAvailable is short (tests/vm/test-kfdsim-big.sh
# sets VM_MEM).
# Checks: the image file of that GPU is over 4 GiB long but holds only a
# few MiB; dump and restore succeed (times printed, with the plugin's own
# account); the self-check after the restore PASSes: every page the
# workload wrote has its bytes, every other page of the big BO is zero, the
# thread's BOs, queues, events, fds.
# vm-boot: big
# vm-timeout: 1200
EXPECT=ok
. /test/lib/guest.sh

gpu_wl_missing && { tap_done; exit; }
kfdsim_debugfs || diag "no kfdsim debugfs"

big=${GPU_BIG_BO:-4160M}
big_bytes=$((${big%M} * 1048576))
need_kb=$(((${big%M} + 768) * 1024)) # the BO once, CRIU and the rest
avail_kb=$(sed -n 's/^MemAvailable: *\([0-9]*\) kB/\1/p' /proc/meminfo)
if [ "$avail_kb" -lt "$need_kb" ]; then
	ok "big: --big-bo $big # SKIP MemAvailable $avail_kb kB < $need_kb kB (VM_MEM)"
	tap_done
	exit
fi

# uptime in hundredths of a second; secs FROM TO: "S.SS"
now() { awk '{ printf "%d\n", $1 * 100 }' /proc/uptime; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b - a) / 100 }'; }

# plugin_says STEP LOG: the plugin's account of a step, as TAP comments
plugin_says() {
	grep -E 'amdgpu_plugin: (dumped|restored|pid [0-9]+ GPU)' "$2" |
		sed 's/^([^)]*) *//; s/amdgpu_plugin: //' | while read -r l; do diag "$1: $l"; done
}

t0=$(now)
if ! GPU_READY_SECS=600 gpu_start big --gpus 1 --threads 1 --big-bo "$big"; then
	fail "big: workload ready"
	tap_done
	exit
fi
t1=$(now)
pid=$WL_PID
gpu=$(awk '$1 == "gpu" { print $2; exit }' "$R.ready")
diag "big: workload set up in $(secs "$t0" "$t1") s"
check "big: a VRAM BO of $big_bytes bytes" eval '[ "$(awk "\$1 == \"bigbo\" { print \$4 }" "$R.ready")" = "$big_bytes" ]'
check "big: a thread with its own BOs on the same GPU" grep -q '^thread 1 ' "$R.ready"

img=$WORK/img
CRIU_TIMEOUT=600 criu_dump "$img" "$pid"
rc=$?
t2=$(now)
check "big: dump (status $rc) in $(secs "$t1" "$t2") s" test "$rc" -eq 0
plugin_says "big, dump" "$img/dump.log"
check "big: the dumped process is gone" gpu_gone "$pid"
check "big: no KFD process left after the dump" wait_until 10 kfd_no_processes
f=$(ls "$img"/amdgpu-bo-*-"$gpu".img 2>/dev/null | head -1)
size=$(stat -c %s "$f" 2>/dev/null || echo 0)
used_kb=$(du -k "$f" 2>/dev/null | cut -f1)
diag "big: $f: $size bytes, ${used_kb:-?} KiB allocated; image dir $(du -sk "$img" | cut -f1) KiB"
check "big: the GPU's BO image is over 4 GiB long (offsets above 32 bits)" eval '[ "$size" -gt $((big_bytes + 65536)) ]'
check "big: ... and sparse: under 16 MiB allocated" eval '[ "${used_kb:-999999}" -lt 16384 ]'

t3=$(now)
CRIU_TIMEOUT=600 criu_restore "$img"
rc=$?
t4=$(now)
check "big: restore (status $rc) in $(secs "$t3" "$t4") s" test "$rc" -eq 0
plugin_says "big, restore" "$img/restore.log"
gpu_restored big "$pid" "$R.ready"
gpu_drop_images
gpu_trigger
gpu_result
t5=$(now)
diag "big: self-check (every page of the big BO) in $(secs "$t4" "$t5") s"
check "big: self-check PASS (written pages' bytes, every other page zero, the thread's BOs)" gpu_passed
check "big: the workload ended" gpu_gone "$pid"
check "big: no workload, criu or KFD process left" gpu_no_strays
tap_done
