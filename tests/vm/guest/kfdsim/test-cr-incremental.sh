#!/bin/sh
# Incremental checkpoints: three successive dumps of one GPU process, each
# with CRIU's --prev-images-dir (and --track-mem, which CRIU needs for a
# parent) pointing at the one before, while the workload rewrites a tenth of
# its GPU memory between dumps (an 80 MiB VRAM BO filled with words unique
# per page and generation: TRIGGER.mutate rewrites 2 of its 20 4-MiB blocks).
# Checks: each later dump's plugin line says how much stayed in the parent
# images and how much was written (at most the changed blocks and the small
# BOs); its BO image files allocate at most a fifth of the first dump's;
# inspect --verify reads the last link through the chain; restoring the last
# link with its parent moved away is refused by the CRIU master before any
# task exists, naming the parent; with the chain back, the restore passes
# the workload's full self-check: every byte of every BO, the big BO page by
# page at its latest generation, fds, queues, events.
# vm-boot: cr
# vm-timeout: 600
. /test/lib/guest.sh

gpu_wl_missing && { tap_done; exit; }
kfdsim_debugfs || diag "no kfdsim debugfs"
if ! gpu_start incr --gpus 2 --big-bo 80M --big-bo-fill; then
	fail "incr: workload ready"
	tap_done
	exit
fi
pid=$WL_PID

# mutate GEN: the workload rewrites its tenth GEN of the big BO
mutate() {
	printf '%s\n' "$1" >"$R.trigger.mutate.tmp" && mv "$R.trigger.mutate.tmp" "$R.trigger.mutate"
	wait_until 60 grep -q "^DONE $1\$" "$R.result.mutate"
}
# bo_kib DIR: KiB the BO contents files of DIR allocate
bo_kib() { du -k -c "$1"/amdgpu-bo-*.img | awk 'END { print $1 }'; }
# written_mib LOG / kept_mib LOG: summed over the GPUs' "incremental:" lines
written_mib() { sed -n 's/.*amdgpu_plugin: pid [0-9]*: gpu [0-9]*: incremental: [0-9]* MiB unchanged .*, \([0-9]*\) MiB written.*/\1/p' "$1" | awk '{ s += $1 } END { print s + 0 }'; }
kept_mib() { sed -n 's/.*amdgpu_plugin: pid [0-9]*: gpu [0-9]*: incremental: \([0-9]*\) MiB unchanged .*/\1/p' "$1" | awk '{ s += $1 } END { print s + 0 }'; }

criu_dump "$WORK/img1" "$pid" --leave-running --track-mem
rc=$?
check "incr: dump 1, full (status $rc)" test "$rc" -eq 0
[ "$rc" -eq 0 ] || criu_why "$WORK/img1/dump.log" "$rc"
full_kib=$(bo_kib "$WORK/img1")
diag "incr: dump 1: BO images allocate $full_kib KiB"
check "incr: probe after dump 1 PASS" gpu_probe 1

for n in 2 3; do
	check "incr: the workload rewrote a tenth of its big BO (generation $n)" mutate "$n"
	args="--track-mem --prev-images-dir ../img$((n - 1))"
	[ "$n" -eq 3 ] || args="$args --leave-running"
	# shellcheck disable=SC2086
	criu_dump "$WORK/img$n" "$pid" $args
	rc=$?
	log=$WORK/img$n/dump.log
	check "incr: dump $n on top of dump $((n - 1)) (status $rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || criu_why "$log" "$rc"
	grep 'amdgpu_plugin: .*incremental:\|no usable parent' "$log" | sed 's/^([^)]*) */# /'
	w=$(written_mib "$log")
	k=$(kept_mib "$log")
	kib=$(bo_kib "$WORK/img$n")
	diag "incr: dump $n: $k MiB left in the parent images, $w MiB written; BO images allocate $kib KiB (dump 1: $full_kib KiB)"
	check "incr: dump $n kept at least 70 MiB in its parents ($k MiB)" test "$k" -ge 70
	check "incr: dump $n wrote at most 10 MiB ($w MiB: 8 MiB changed)" test "$w" -le 10
	check "incr: dump $n's BO images are at most a fifth of dump 1's ($kib of $full_kib KiB)" \
		test "$((kib * 5))" -le "$full_kib"
	[ "$n" -eq 3 ] || check "incr: probe after dump $n PASS" gpu_probe "$n"
done
check "incr: the tree is gone after the last dump" gpu_gone "$pid"
check "incr: no KFD process left" eval 'kfdsim_debugfs && wait_until 10 kfd_no_processes'

if [ -x /usr/bin/amdgpu-criu ]; then
	amdgpu-criu inspect "$WORK/img3" --verify >"$WORK/inspect.txt" 2>&1
	rc=$?
	sed 's/^/# /' "$WORK/inspect.txt" | grep -E 'verify|parent|chain' | head -8
	check "incr: inspect --verify reads the last link through the chain (status $rc)" test "$rc" -eq 0
	check "incr: inspect shows what the parents hold" grep -q 'in the parent images' "$WORK/inspect.txt"
fi

# the parent of the last link moved away: refused before any task exists
mv "$WORK/img2" "$WORK/img2.away"
rm -f "$R.trigger.probe" "$R.result.probe"
criu_restore "$WORK/img3"
rc=$?
check "incr: restore without its parent refused (status $rc)" test "$rc" -ne 0
check "incr: the plugin names the missing parent" \
	grep -qE "amdgpu_plugin: Error: .*parent" "$WORK/img3/restore.log"
grep -E 'amdgpu_plugin: Error' "$WORK/img3/restore.log" | head -2 | sed 's/^([^)]*) */# /'
check "incr: no task of it exists" eval '! alive "$pid"'
check "incr: no KFD process after the refusal" eval 'wait_until 10 kfd_no_processes'
mv "$WORK/img2.away" "$WORK/img2"

criu_restore "$WORK/img3"
rc=$?
check "incr: restore of the last link (status $rc)" test "$rc" -eq 0
[ "$rc" -eq 0 ] || criu_why "$WORK/img3/restore.log" "$rc"
gpu_restored incr "$pid" "$R.ready"
check "incr: probe of the restored process PASS" gpu_probe 4
gpu_finish incr "$pid"
tap_done
