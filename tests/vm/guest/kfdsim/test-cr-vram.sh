#!/bin/sh
# A restore onto GPUs with less free VRAM than the checkpoint needs. One GPU
# process with a 64 MiB VRAM BO besides its other VRAM BOs (--gpus 1
# --big-bo 64M: 124 MiB of VRAM; the built-in machine's two 64 GiB GPUs) is
# dumped; `amdgpu-criu check` says it fits; then kfdsim's VRAM budget per GPU
# (vram_limit_mb) is lowered to 48 MiB, as if other clients held the rest:
# - `amdgpu-criu check` says not compatible, naming GPUs and bytes;
# - refused by the CRIU master before any task exists, in one line naming
#   the checkpointed and the local GPU, the bytes needed and the bytes free
#   (as KFD's AVAILABLE_MEMORY says); nothing left, images untouched;
# - the same with AVAILABLE_MEMORY failing in the master (injected EIO): the
#   master warns that it could not check, the task's KFD RESTORE meets the
#   real ENOMEM of the VRAM accounting: nothing left, images untouched;
# - with the budget back, the BO contents cannot be CPU-mapped by the CPU
#   engine (kfdsim "gem_mmap entry ENOMEM": no pages), or SDMA's submission
#   meets ENOMEM ("cs entry ENOMEM"): the same;
# then the restore of the same images succeeds and the self-check PASSes.
# vm-boot: faults
# vm-timeout: 180
. /test/lib/guest.sh

LIMIT=/sys/module/amdgpu_kfdsim/parameters/vram_limit_mb
gpu_wl_missing && { tap_done; exit; }
if ! kfdsim_debugfs || [ ! -w "$KFDSIM_INJECT" ] || [ ! -w "$LIMIT" ]; then
	ok "vram # SKIP no kfdsim debugfs or vram_limit_mb"
	tap_done
	exit
fi
kfd_inject_take >/dev/null
echo 0 >"$LIMIT"
if ! gpu_start vram --gpus 1 --big-bo 64M --render-fds; then
	fail "vram: workload ready"
	tap_done
	exit
fi
pid=$WL_PID
img=$WORK/img
criu_dump "$img" "$pid"
rc=$?
check "vram: dump (status $rc)" test "$rc" -eq 0
check "vram: the dumped process is gone" gpu_gone "$pid"
check "vram: no KFD process left" wait_until 10 kfd_no_processes
gpu_img_sums "$img" >"$WORK/sums"

# refused NAME REGEX [ONE]: CRIU failed, a plugin error line matches REGEX
# (ONE: it is the only one), nothing left, every image file as dumped. (A
# failure in the restored task has its own line and the master's summary.)
refused() {
	local name=$1 want=$2
	grep 'amdgpu_plugin: Error: ' "$img/restore.log" >"$WORK/errors"
	sed 's/^/# /' "$WORK/errors"
	[ -z "${3:-}" ] || check "$name: the plugin says why in one line" test "$(wc -l <"$WORK/errors")" -eq 1
	check "$name: ... matching /$want/" grep -qE "$want" "$WORK/errors"
	check "$name: no restored task, criu or KFD process left" gpu_no_strays
	check "$name: the pid is free again" wait_until 10 eval '[ ! -d /proc/$pid ]'
	check "$name: no file of kfdsim open anywhere" kfdsim_idle
	check "$name: every image file as dumped (sha256)" eval 'gpu_img_sums "$img" | cmp -s - "$WORK/sums"'
	[ "$TAP_FAILED" -eq 0 ] || keep "$img/restore.log"
}

# tool_check NAME STATUS REGEX: amdgpu-criu check exits STATUS, prints REGEX
tool_check() {
	local rc
	amdgpu-criu check "$img" >"$WORK/check.out" 2>&1
	rc=$?
	sed 's/^/# check: /' "$WORK/check.out"
	check "$1: amdgpu-criu check exits $2 (status $rc)" test "$rc" -eq "$2"
	check "$1: ... saying /$3/" grep -qE "$3" "$WORK/check.out"
}
tool_check fits 0 '^devices: /dev/kfd'
check "fits: free VRAM was checked (no note)" eval '! grep -q "free VRAM not checked" "$WORK/check.out"'

echo 48 >"$LIMIT"
tool_check full 1 '^not compatible: checkpointed GPU [0-9]+ \(node [0-9]+\) needs [0-9]+ bytes \([0-9]+ MiB\) of VRAM, but local GPU [0-9]+ .* has [0-9]+ bytes \([0-9]+ MiB\) free'
rm -f "$img/restore.log"
criu_restore "$img"
rc=$?
check "full: restore refused (status $rc)" test "$rc" -ne 0
check "full: refused by the master, before any task exists" grep -q 'amdgpu_plugin: initialised for restore (failed)' "$img/restore.log"
refused full 'checkpointed GPU [0-9]+ \(node [0-9]+\) needs [0-9]+ bytes \([0-9]+ MiB\) of VRAM, but local GPU [0-9]+ \(node [0-9]+, renderD[0-9]+\) has [0-9]+ bytes \([0-9]+ MiB\) free' one

rm -f "$img/restore.log"
kfd_inject "available_memory entry EIO 0"
criu_restore "$img"
rc=$?
left=$(kfd_inject_take)
check "enomem: restore failed (status $rc)" test "$rc" -ne 0
check "enomem: the master could not check and says so" grep -q 'amdgpu_plugin: Warn: free VRAM not checked' "$img/restore.log"
check "enomem: the master's AVAILABLE_MEMORY was refused (injected)" eval 'echo "$left" | awk "\$1 == \"available_memory\" && \$6 > 0" | grep -q .'
refused enomem 'KFD RESTORE of pid [0-9]+ \(file [0-9]+\) failed: Cannot allocate memory.*out of memory'

echo 0 >"$LIMIT"
# contents_enomem NAME ENGINE RULE REGEX [PARALLEL]: the BO contents cannot
# be written. PARALLEL: AMDGPU_CRIU_PARALLEL_RESTORE for this restore.
contents_enomem() {
	rm -f "$img/restore.log"
	kfd_inject "$3"
	export AMDGPU_CRIU_COPY_ENGINE=$2
	[ -z "${5:-}" ] || export AMDGPU_CRIU_PARALLEL_RESTORE="$5"
	criu_restore "$img"
	rc=$?
	unset AMDGPU_CRIU_COPY_ENGINE AMDGPU_CRIU_PARALLEL_RESTORE
	left=$(kfd_inject_take)
	check "$1: restore failed (status $rc)" test "$rc" -ne 0
	check "$1: the fault was hit" test -z "$left"
	refused "$1" "$4"
}
# The CPU engine's BO mmap, written by the task itself: in parallel restore
# CRIU's restorer maps the application's render-node BOs (--render-fds) at
# the same time as the copier, and either may take the one injected fault.
contents_enomem mmap-enomem cpu "gem_mmap entry ENOMEM" 'pid [0-9]+: BO contents: .*Cannot allocate memory.*out of memory' 0
contents_enomem sdma-enomem sdma "cs entry ENOMEM" 'pid [0-9]+: BO contents: .*copy engine write: out of memory for the SDMA copy'

rm -f "$img/restore.log"
criu_restore "$img"
rc=$?
check "retry: restore with the VRAM free again (status $rc)" test "$rc" -eq 0
gpu_restored retry "$pid" "$R.ready"
check "retry: the restored process's queues run" wait_until 10 kfd_running "$pid"
gpu_finish retry "$pid"
check "kfdsim: no file of it open any more" kfdsim_idle
echo 0 >"$LIMIT"
tap_done
