#!/bin/sh
# A failed restore leaves nothing behind. One GPU process (--mmio
# --render-fds --threads 2: an AQL and an SDMA queue besides the main
# thread's) is dumped once; then the same images are restored once per
# fault: kfdsim injects an error at every stage of RESTORE (entry, queue
# eviction, process, devices, BOs, the 6th BO, GPU mapping (EINTR: never
# retried), objects, the final size check, an SDMA slot taken), of the SDMA
# engine writing the BO contents (a job cancelled by a GPU reset, the
# kernel's job timeout, a CS refused after a reset) and of
# RESUME (entry, lookup ESRCH, SVM), and the plugin meets damaged images
# (a BO contents or index file missing, a truncated BO contents file, a
# truncated process image; the master refuses those before any task
# exists). After each: CRIU failed, the rule was hit, the plugin's error
# line names what failed, no workload or criu process and no KFD process is
# left, the pid is free again, no file of kfdsim is open anywhere (module
# reference count 0), and every image file is as dumped (sha256). A failed
# RESUME kills the restored task (else it would run with GPU queues that
# never start; CRIU 4.1.1 ignores the hook's status), so CRIU fails too.
# Last, a clean restore of the same images succeeds, the restored process's
# queues run and its self-check PASSes.
# vm-boot: faults
# vm-timeout: 480
. /test/lib/guest.sh

gpu_wl_missing && { tap_done; exit; }
if ! kfdsim_debugfs || [ ! -w "$KFDSIM_INJECT" ]; then
	ok "restore faults # SKIP no kfdsim debugfs"
	tap_done
	exit
fi
kfd_inject_take >/dev/null
if ! gpu_start rf --mmio --render-fds --threads 2; then
	fail "rf: workload ready"
	tap_done
	exit
fi
pid=$WL_PID
img=$WORK/img
diag "$(kfd_state "$pid")"
criu_dump "$img" "$pid"
rc=$?
check "rf: dump (status $rc)" test "$rc" -eq 0
check "rf: the dumped process is gone" gpu_gone "$pid"
check "rf: no KFD process left" wait_until 10 kfd_no_processes

# every image file (CRIU writes its logs and stats-restore there too): sums
# (sha256, checked at the end), meta (inode, size, mtime, ctime: a write, a
# truncation, a replacement shows; checked after each case)
images() { (cd "$img" && for f in *; do case "$f" in *.log | stats-*) ;; *) "$@" "$f" ;; esac; done); }
sums() { images sha256sum; }
meta() { images stat -c '%i %s %Y %Z %n'; }
sums >"$WORK/sums"
meta >"$WORK/meta"
check "rf: $(wc -l <"$WORK/sums") image files, the plugin's among them" grep -q ' amdgpu-kfd-' "$WORK/sums"
diag "images: $(du -sk "$img" | cut -f1) KiB stored"
kfd_img=$(sed -n 's/.* \(amdgpu-kfd-[0-9]*\.img\)$/\1/p' "$WORK/sums" | head -1)
bo_img=$(sed -n 's/.* \(amdgpu-bo-[0-9]*-[0-9]*\.img\)$/\1/p' "$WORK/sums" | head -1)

# nothing_left NAME: what a failed restore must leave: no process, no KFD
# process, no kfdsim file open, the pid free, no image file touched
nothing_left() {
	check "$1: no workload, criu or KFD process left" gpu_no_strays
	check "$1: the pid is free again" wait_until 10 eval '[ ! -d /proc/$pid ]'
	check "$1: no file of kfdsim open anywhere" kfdsim_idle
	check "$1: no image file written, replaced or removed" eval '[ "$(meta)" = "$(cat "$WORK/meta")" ]'
}
# repaired NAME FILE: FILE, damaged by the test and repaired, is as dumped
repaired() {
	check "$1: $2 as dumped again" eval '[ "$(cd "$img" && sha256sum "$2")" = "$(grep " $2\$" "$WORK/sums")" ]'
	meta >"$WORK/meta"
}

# restore_fault NAME REGEX RULE...: arms RULEs (none: the images are
# damaged), restores; CRIU must fail, every rule must have been hit, an
# "amdgpu_plugin: Error:" line must match REGEX; then nothing_left, unless
# NOCHECK (the caller repairs the images first).
restore_fault() {
	local name=$1 want=$2 rc
	shift 2
	diag "$name at $(cut -d' ' -f1 /proc/uptime) s"
	rm -f "$img/restore.log"
	kfd_inject "$@" || fail "$name: arm $*"
	criu_restore "$img"
	rc=$?
	left=$(kfd_inject_take)
	check "$name: restore failed (status $rc)" test "$rc" -ne 0
	[ $# -eq 0 ] || check "$name: the fault was hit ($*)" eval '! echo "$left" | awk "NF && \$6 == 0" | grep -q .'
	[ -z "$left" ] || { diag "armed still: $left"; criu_why "$img/restore.log" "$rc"; }
	check "$name: the plugin says what failed (/$want/)" grep -qE "amdgpu_plugin: Error: .*$want" "$img/restore.log"
	grep -E 'amdgpu_plugin: Error|Error \(' "$img/restore.log" | head -3 | sed 's/^/# /'
	[ -n "${NOCHECK:-}" ] || nothing_left "$name"
}

# RESTORE in the restored task: not transactional, never retried
restore_fault r-entry 'KFD RESTORE of pid [0-9]+ \(file [0-9]+\) failed: Input/output error' "restore entry EIO"
restore_fault r-evict 'KFD RESTORE .* failed: Timer expired' "restore evict ETIME"
restore_fault r-process 'KFD RESTORE .* failed: Invalid argument' "restore process EINVAL"
restore_fault r-devices 'KFD RESTORE .* failed: Invalid argument' "restore devices EINVAL"
restore_fault r-bos 'KFD RESTORE .* failed: Cannot allocate memory' "restore bos ENOMEM"
restore_fault r-bo6 'KFD RESTORE .* failed: Cannot allocate memory' "restore bo ENOMEM 1 5"
restore_fault r-map-eintr 'KFD RESTORE .* failed: Interrupted system call' "restore map EINTR 0"
hits=$(echo "$left" | awk '$1 == "restore" && $2 == "map" { print $6 }')
check "r-map-eintr: RESTORE not retried (one EINTR: $hits)" test "${hits:-0}" -eq 1
restore_fault r-objects 'KFD RESTORE .* failed: Invalid argument' "restore objects EINVAL"
restore_fault r-end 'KFD RESTORE .* failed: Invalid argument' "restore end EINVAL"
restore_fault r-sdma-slot 'KFD RESTORE .* failed: Device or resource busy' "restore sdma_slot EBUSY"
# the SDMA engine writing the BO contents (datapath/bo_copy_sdma.c)
restore_fault r-sdma-cancel 'BO contents: gpu [0-9]+: BO [0-9]+ offset 0x[0-9a-f]+: copy engine write: the SDMA job was cancelled: the GPU was reset' "sdma job ECANCELED 1 2"
restore_fault r-sdma-timeout "BO contents: gpu [0-9]+: BO [0-9]+ offset 0x[0-9a-f]+: copy engine write: the kernel's SDMA job timeout fired" "sdma job ETIME"
restore_fault r-cs-cancel 'BO contents: gpu [0-9]+: BO [0-9]+ offset 0x[0-9a-f]+: copy engine write: the SDMA job was cancelled' "cs entry ECANCELED"

# RESUME in the CRIU master: the restored task is killed, CRIU fails
for f in "entry EIO Input/output error" "lookup ESRCH No such process" "svm EFAULT Bad address"; do
	set -- $f
	restore_fault "resume-$1" "KFD RESUME of pid $pid failed: ${f#* * }; .*killing it" "resume $1 $2"
	check "resume-$1: CRIU reports the failed restore" grep -q "Restoring FAILED" "$img/restore.log"
done

# damaged images: refused by the master, before any task exists
NOCHECK=1
before_tasks() { check "$1: refused before any task exists" grep -q 'amdgpu_plugin: initialised for restore (failed)' "$img/restore.log"; }
for f in "$bo_img" "${bo_img%.img}.idx"; do
	mv "$img/$f" "$WORK/$f.away"
	restore_fault "missing-${f##*.}" "BO contents: .*$f: No such file or directory"
	before_tasks "missing-${f##*.}"
	mv "$WORK/$f.away" "$img/$f"
	repaired "missing-${f##*.}" "$f"
	nothing_left "missing-${f##*.}"
done
size=$(wc -c <"$img/$bo_img")
tail -c 4096 "$img/$bo_img" >"$WORK/tail.page"
truncate -s $((size - 4096)) "$img/$bo_img"
restore_fault truncated-bo "BO contents: .*$bo_img is truncated"
before_tasks truncated-bo
check "truncated-bo: the image check sees the damage (negative control)" eval '[ "$(meta)" != "$(cat "$WORK/meta")" ]'
cat "$WORK/tail.page" >>"$img/$bo_img"
repaired truncated-bo "$bo_img"
nothing_left truncated-bo
cp "$img/$kfd_img" "$WORK/kfd.img.saved"
truncate -s $(($(wc -c <"$img/$kfd_img") / 2)) "$img/$kfd_img"
restore_fault truncated-kfd "$kfd_img"
before_tasks truncated-kfd
cp "$WORK/kfd.img.saved" "$img/$kfd_img"
repaired truncated-kfd "$kfd_img"
nothing_left truncated-kfd
NOCHECK=
check "images: every file as dumped (sha256) after all failed restores" eval '[ "$(sums)" = "$(cat "$WORK/sums")" ]'

# the same images restore cleanly
rm -f "$img/restore.log"
criu_restore "$img"
rc=$?
check "clean: restore (status $rc)" test "$rc" -eq 0
gpu_restored clean "$pid" "$R.ready"
check "clean: the restored process's queues run" wait_until 10 kfd_running "$pid"
check "clean: kfdsim in use meanwhile (negative control of the idle check)" eval '[ "$(cat /sys/module/amdgpu_kfdsim/refcnt)" -gt 0 ]'
kfd_running "$pid" || diag "$(kfd_state "$pid")"
gpu_finish clean "$pid"
check "kfdsim: no file of it open any more" kfdsim_idle
tap_done
