#!/bin/sh
# The plugin, built with CRIU 4.1.1's plugin header, checkpoints and restores
# a GPU process in CRIU 4.2.x (Debian testing's, /usr/sbin/criu-4.2 in the
# initramfs when the host's cache had it: scripts/fetch-criu-testing.sh, run
# by `make deps`). The workload of test-cr-one-gpu (one GPU, BOs of every
# type, a queue with its doorbell mapped, the MMIO page mapped, events, its
# render-node fd kept open) is dumped and restored by criu-4.2 only: same
# pid, exactly its own fds (CRIU 4.2.1, like 4.1.1, mmaps with the fd
# UPDATE_VMA_MAP returns and closes it: no extra fd may be left), the same
# user gpu_ids, the self-check PASSes. Both CRIU logs must name version 4.2
# and carry the plugin's dump and restore summaries (so the cycle really ran
# in 4.2 with the plugin taking part).
# vm-boot: cr
EXPECT=ok
. /test/lib/guest.sh
CRIU_BIN=criu-4.2

gpu_wl_missing && { tap_done; exit; }
if ! command -v "$CRIU_BIN" >/dev/null; then
	ok "criu 4.2 # SKIP no /usr/sbin/criu-4.2 in the initramfs (the host's cache has no Debian testing criu: scripts/fetch-criu-testing.sh)"
	tap_done
	exit
fi
v42=$("$CRIU_BIN" --version 2>&1 | sed -n 's/^Version: //p')
v41=$(criu --version 2>&1 | sed -n 's/^Version: //p')
diag "criu-4.2 is $v42, criu is $v41"
check "criu-4.2 runs and is version 4.2.x ($v42)" eval 'case "$v42" in 4.2*) true ;; *) false ;; esac'
check "the default criu is another version ($v41): CRIU_BIN chooses" eval '[ -n "$v41" ] && [ "$v41" != "$v42" ]'

kfdsim_debugfs || diag "no kfdsim debugfs"
if ! gpu_start c42 --mmio --gpus 1 --render-fds; then
	fail "c42: workload ready"
	tap_done
	exit
fi
pid=$WL_PID
check "c42: /proc/PID/fd is what the workload listed" gpu_fds_ok "$pid" "$R.ready"
img=$WORK/img
t0=$(date +%s)
gpu_dump_restore c42 "$img" "$pid"
diag "c42: dump + restore with criu 4.2 in $(($(date +%s) - t0)) s"
check "c42: dump.log is CRIU $v42's" grep -q "Version: $v42" "$img/dump.log"
check "c42: restore.log is CRIU $v42's" grep -q "Version: $v42" "$img/restore.log"
check "c42: the plugin dumped the KFD process" grep -q "amdgpu_plugin: dumped pid $pid " "$img/dump.log"
check "c42: the plugin restored the KFD process" grep -q "amdgpu_plugin: restored pid $pid " "$img/restore.log"
n=$(grep -c 'New mmap .* fd [0-9]' "$img/restore.log")
diag "c42: $n mappings got a new offset from UPDATE_VMA_MAP"
grep 'New mmap .* fd [0-9]' "$img/restore.log" | sed 's/^([^)]*) */# /' | head -20
check "c42: UPDATE_VMA_MAP moved the render-node mappings ($n)" test "$n" -gt 0
gpu_finish c42 "$pid"
tap_done
