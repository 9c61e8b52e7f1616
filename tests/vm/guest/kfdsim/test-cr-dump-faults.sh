#!/bin/sh
# A failed dump leaves the application running. One GPU process (--mmio
# --render-fds --bos 8: 40 more BOs filled with patterns, both GPUs of the
# built-in machine) is dumped once per fault:
# kfdsim injects an error at every stage of PROCESS_INFO (entry, eviction
# of all GPUs or of the second one, counting, an uncheckpointable queue
# type) and of CHECKPOINT (entry, process, devices, queues, events, SVM,
# the 4th BO), EINTR without end, of the SDMA engine copying BO contents
# (a job cancelled by a GPU reset, the kernel's job timeout, a CS refused
# after a reset, a hung engine ended by AMDGPU_CRIU_SDMA_TIMEOUT_MS), and
# the plugin meets faults of its own:
# an image directory too small for the BO contents (ENOSPC), image files
# that exist already (O_EXCL). After each: CRIU failed, the rule was hit,
# the plugin's error line names what failed, the application runs, its KFD
# process is not paused and its queues are active, it has exactly its fds,
# its probe (bytes, doorbells, MMIO, fds, apertures, render fds) PASSes, no
# criu is left; a file the plugin did not create is left as it was.
# UNPAUSE: EINTR is retried (queues run again); a hard error is reported
# loudly and is true (the process stays paused: KFD cannot be asked again
# safely). Last, EINTR once on PROCESS_INFO, CHECKPOINT and UNPAUSE: each
# retried, the dump succeeds, the restore too, and the restored process
# (its queues running again) PASSes its self-check.
# vm-boot: faults
# vm-timeout: 600
. /test/lib/guest.sh

gpu_wl_missing && { tap_done; exit; }
if ! kfdsim_debugfs || [ ! -w "$KFDSIM_INJECT" ]; then
	ok "dump faults # SKIP no kfdsim debugfs"
	tap_done
	exit
fi
kfd_inject_take >/dev/null
if ! gpu_start df --mmio --render-fds --bos 8; then
	fail "df: workload ready"
	tap_done
	exit
fi
pid=$WL_PID
probe=0
check "df: its KFD process runs (not paused, queues active)" kfd_running "$pid"

# app_ok NAME: the application is as it was before the failed dump
app_ok() {
	probe=$((probe + 1))
	check "$1: the application still runs" alive "$pid"
	check "$1: its KFD process is not paused, its queues are active" wait_until 5 kfd_running "$pid"
	kfd_running "$pid" || diag "$(kfd_state "$pid")"
	check "$1: it has exactly its fds" gpu_fds_ok "$pid" "$R.ready"
	check "$1: its probe PASSes" gpu_probe "$probe"
	check "$1: no criu process left" no_criu
}

# dump_fault NAME REGEX RULE...: arms RULEs, dumps; CRIU must fail, every
# rule must have been hit, an "amdgpu_plugin: Error:" line must match REGEX
# (extended), and app_ok. DUMP_ARGS: more criu dump arguments; LOG: the log.
dump_fault() {
	local name=$1 want=$2 img=$WORK/img-fault rc log
	shift 2
	rm -rf "$img"
	mkdir -p "$img"
	log=${LOG:-$img/dump.log}
	kfd_inject "$@" || fail "$name: arm $*"
	# shellcheck disable=SC2086
	criu_dump "$img" "$pid" ${DUMP_ARGS:-}
	rc=$?
	left=$(kfd_inject_take)
	check "$name: dump failed (status $rc)" test "$rc" -ne 0
	# gone once hit, or (COUNT 0) still armed with its hits
	check "$name: the fault was hit ($*)" eval '! echo "$left" | awk "NF && \$6 == 0" | grep -q .'
	[ -z "$left" ] || { diag "armed still: $left"; criu_why "$log" "$rc"; }
	check "$name: the plugin says what failed (/$want/)" grep -qE "amdgpu_plugin: Error: .*$want" "$log"
	check "$name: CRIU does not take the GPU file for one of an unknown type" eval '! grep -q "Can.t dump file .* of that type" "$log"'
	grep -E 'amdgpu_plugin: Error|Error \(' "$log" | head -3 | sed 's/^/# /'
	[ "$rc" -ne 0 ] || keep "$log"
	app_ok "$name"
}

# PROCESS_INFO: the kernel rolls back, nothing is paused
dump_fault pi-entry 'PROCESS_INFO on /dev/kfd file [0-9]+ failed: Input/output error' "process_info entry EIO"
dump_fault pi-evict 'PROCESS_INFO .* failed: Timer expired' "process_info evict ETIME"
dump_fault pi-evict-gpu2 'PROCESS_INFO .* failed: Timer expired' "evict gpu ETIME 1 1"
dump_fault pi-count 'PROCESS_INFO .* failed: Cannot allocate memory' "process_info count ENOMEM"
dump_fault pi-queue-type 'PROCESS_INFO .* failed: .*queue of a type KFD cannot checkpoint' "process_info queue_type EOPNOTSUPP"
# EINTR is retried, but not for ever
dump_fault pi-eintr-always 'PROCESS_INFO .* failed: Interrupted system call' "process_info entry EINTR 0"
hits=$(echo "$left" | awk '$1 == "process_info" && $2 == "entry" { print $6 }')
check "pi-eintr-always: retried, a bounded number of times ($hits)" eval '[ "${hits:-0}" -gt 1 ] && [ "$hits" -le 1000 ]'

# CHECKPOINT: paused by PROCESS_INFO, so the exit hook must unpause
for f in "entry EIO" "process EFAULT" "devices ENOMEM" "queues EINVAL" "events EIO" "svm EFAULT"; do
	dump_fault "ck-${f% *}" "CHECKPOINT of pid [0-9]+ failed: " "checkpoint $f"
	check "ck-${f% *}: the plugin unpaused it" grep -q "amdgpu_plugin: unpaused the GPU queues of pid" "$WORK/img-fault/dump.log"
done
dump_fault ck-bo4 'CHECKPOINT of pid [0-9]+ failed: Bad address' "checkpoint bo EFAULT 1 3"

# The SDMA engine reading the BO contents: the kernel's failures, and a hung
# engine that our deadline (AMDGPU_CRIU_SDMA_TIMEOUT_MS) ends in seconds
where='cannot save BO contents: gpu [0-9]+: BO [0-9]+ offset 0x[0-9a-f]+: copy engine read'
dump_fault sdma-cancel "$where: the SDMA job was cancelled: the GPU was reset or lost VRAM" "sdma job ECANCELED 1 3"
dump_fault sdma-timeout "$where: the kernel's SDMA job timeout fired" "sdma job ETIME"
dump_fault cs-cancel "$where: the SDMA job was cancelled" "cs entry ECANCELED"
export AMDGPU_CRIU_SDMA_TIMEOUT_MS=3000
start=$(date +%s)
dump_fault sdma-hang "$where: the SDMA engine did not finish within the deadline" "sdma hang ETIME"
took=$(($(date +%s) - start))
unset AMDGPU_CRIU_SDMA_TIMEOUT_MS
# that our deadline ended it, not the kernel's 10 s, is dump_fault's check of
# the message (ETIMEDOUT's, not ETIME's); the time depends on the machine
diag "sdma-hang: the dump gave up after $took s (deadline 3 s; the kernel's job timeout 10 s)"

# the names and sizes of a good dump (--leave-running): the plugin's files
img=$WORK/img-lr
criu_dump "$img" "$pid" --leave-running
rc=$?
check "lr: dump --leave-running (status $rc)" test "$rc" -eq 0
app_ok lr
kfd_img=$(cd "$img" && ls amdgpu-kfd-*.img 2>/dev/null | head -1)
bo_img=$(cd "$img" && ls amdgpu-bo-*.img 2>/dev/null | head -1)
# KiB the BO contents take (zero pages may be holes)
bo_kb=$(du -ck "$img"/amdgpu-bo-*.img 2>/dev/null | tail -1 | cut -f1)
diag "files: $kfd_img $bo_img; BO contents ${bo_kb:-0} KiB stored; $(du -sk "$img" | cut -f1) KiB in all"
check "lr: a process image and BO contents (over 1 MiB stored)" eval '[ -n "$kfd_img" ] && [ -n "$bo_img" ] && [ "${bo_kb:-0}" -gt 1024 ]'

# image files that exist already: O_EXCL fails; the file stays as it was
exists_fault() {
	local name=$1 file=$2 want=$3
	rm -rf "$WORK/img-fault"
	mkdir -p "$WORK/img-fault"
	echo "not the plugin's" >"$WORK/img-fault/$file"
	# dump_fault must not remove the dir: arm nothing, pass the dir as is
	criu_dump "$WORK/img-fault" "$pid"
	rc=$?
	check "$name: dump failed (status $rc)" test "$rc" -ne 0
	check "$name: the plugin says what failed (/$want/)" grep -qE "amdgpu_plugin: Error: .*$want" "$WORK/img-fault/dump.log"
	grep -E 'amdgpu_plugin: Error' "$WORK/img-fault/dump.log" | head -2 | sed 's/^/# /'
	check "$name: $file is left as it was" eval '[ "$(cat "$WORK/img-fault/$file")" = "not the plugin'"'"'s" ]'
	check "$name: no BO contents file of this dump left" eval '! ls "$WORK/img-fault"/amdgpu-bo-* 2>/dev/null | grep -v "/$file$" | grep -q .'
	app_ok "$name"
}
if [ -n "$bo_img" ]; then
	exists_fault exists-kfd "$kfd_img" "$kfd_img.*File exists"
	exists_fault exists-bo-img "$bo_img" "${bo_img}.*File exists"
	exists_fault exists-bo-idx "${bo_img%.img}.idx" "${bo_img%.img}.idx.*File exists"
fi

# an image directory with room for all of CRIU's small files and the
# process image, and half the BO contents: ENOSPC while the plugin writes
# them (before CRIU's memory pages); the log goes elsewhere
mnt=$WORK/tiny
mkdir -p "$mnt"
other_kb=$(cd "$img" && for f in *; do
	case "$f" in pages-*.img | amdgpu-bo-*.img | *.log | stats-*) ;; *) du -k "$f" | cut -f1 ;; esac
done | awk '{ s += $1 } END { print s }')
tiny_kb=$((other_kb + ${bo_kb:-0} / 2))
if mount -t tmpfs -o size="${tiny_kb}k" tiny "$mnt"; then
	diag "tmpfs of $tiny_kb KiB (other files $other_kb KiB, BO contents ${bo_kb:-0} KiB)"
	rc=0
	timeout -s KILL "$CRIU_TIMEOUT" criu dump -t "$pid" -D "$mnt" -v4 -o "$WORK/enospc-dump.log" || rc=$?
	check "enospc: dump failed (status $rc)" test "$rc" -ne 0
	check "enospc: the plugin says what failed" grep -qE 'amdgpu_plugin: Error: .*cannot save BO contents: .*amdgpu-bo-.*No space left on device' "$WORK/enospc-dump.log"
	grep -E 'amdgpu_plugin: Error' "$WORK/enospc-dump.log" | head -2 | sed 's/^/# /'
	check "enospc: the plugin removed its partial BO contents files" eval '! ls "$mnt"/amdgpu-bo-* 2>/dev/null | grep -q .'
	diag "the tmpfs after: $(ls -s "$mnt" | tr '\n' ' ')"
	keep "$WORK/enospc-dump.log"
	app_ok enospc
	umount "$mnt"
else
	fail "enospc: tmpfs of $tiny_kb KiB mounted"
fi
rm -rf "$img"

# UNPAUSE: EINTR retried, after a CHECKPOINT failure
dump_fault unpause-eintr 'CHECKPOINT of pid [0-9]+ failed: ' "checkpoint entry EIO" "unpause entry EINTR"
check "unpause-eintr: unpaused after the retry" grep -q "amdgpu_plugin: unpaused the GPU queues of pid $pid" "$WORK/img-fault/dump.log"

# UNPAUSE failing for good: reported loudly and truly. app_ok does not
# apply: the process stays paused (a second UNPAUSE after a failed queue
# restore is not safe in KFD); only a restart or a dump + restore helps.
rm -rf "$WORK/img-fault"
kfd_inject "checkpoint entry EIO" "unpause restore EIO"
criu_dump "$WORK/img-fault" "$pid"
rc=$?
left=$(kfd_inject_take)
check "unpause-eio: dump failed (status $rc)" test "$rc" -ne 0
check "unpause-eio: both faults hit" test -z "$left"
check "unpause-eio: the plugin says the queues stay stopped" \
	grep -qE "amdgpu_plugin: Error: cannot unpause the GPU queues of pid $pid .*Input/output error.* stays stopped" "$WORK/img-fault/dump.log"
grep -E 'amdgpu_plugin: Error' "$WORK/img-fault/dump.log" | head -3 | sed 's/^/# /'
check "unpause-eio: the application still runs" alive "$pid"
check "unpause-eio: and is paused, as the plugin said" eval 'kfd_state "$pid" | grep -q "^pid=$pid paused=1 "'
check "unpause-eio: kfd_running sees it (negative control)" eval '! kfd_running "$pid"'
check "unpause-eio: no criu process left" no_criu
rm -rf "$WORK/img-fault"

# EINTR once on PROCESS_INFO, CHECKPOINT and UNPAUSE: retried, the dump
# succeeds; the restored process runs its queues again and PASSes
img=$WORK/img-eintr
kfd_inject "process_info entry EINTR" "checkpoint entry EINTR" "unpause entry EINTR"
criu_dump "$img" "$pid"
rc=$?
left=$(kfd_inject_take)
check "eintr: dump with EINTR once per op (status $rc)" test "$rc" -eq 0
check "eintr: every EINTR was hit (and retried)" test -z "$left"
[ -z "$left" ] || diag "armed still: $left"
check "eintr: the dumped process is gone" gpu_gone "$pid"
check "eintr: no KFD process left" wait_until 10 kfd_no_processes
criu_restore "$img"
rc=$?
check "eintr: restore (status $rc)" test "$rc" -eq 0
gpu_restored eintr "$pid" "$R.ready"
check "eintr: the restored process's queues run" wait_until 10 kfd_running "$pid"
kfd_running "$pid" || diag "$(kfd_state "$pid")"
gpu_finish eintr "$pid"
check "kfdsim: no file of it open any more" kfdsim_idle
tap_done
