#!/bin/sh
# Parallel restore (plugin/restore/restore_copy.h) and its switch: a process with a
# 192 MiB VRAM BO and 192 MiB of host memory, every word written, dumped and
# restored twice: with AMDGPU_CRIU_PARALLEL_RESTORE unset (the default: the
# CRIU master's copier writes the BO contents while CRIU restores the task's
# memory) and with it 0 (the task writes them itself, first). Checks per
# mode: the restore log says who wrote the contents; the restored process
# passes its full self-check (every byte of the BO and of the host memory,
# fds, queues, events); nothing is left. Prints both restore times (the
# time saved; TCG makes them noisy, so they are reported, not compared).
# A bad value of the variable fails the restore before any task exists.
# vm-boot: cr
# vm-timeout: 900
. /test/lib/guest.sh

gpu_wl_missing && { tap_done; exit; }
kfdsim_debugfs || diag "no kfdsim debugfs"

# uptime in hundredths of a second; secs FROM TO: "S.SS"
now() { awk '{ printf "%d\n", $1 * 100 }' /proc/uptime; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b - a) / 100 }'; }

# cycle NAME MODE: dump and restore with AMDGPU_CRIU_PARALLEL_RESTORE=MODE ("" = unset)
cycle() {
	local name=$1 mode=$2 img=$WORK/img-$1 rc t0 t1 log
	if ! GPU_READY_SECS=300 gpu_start "$name" --gpus 1 --big-bo 192M --big-bo-fill --host-mem 192M; then
		fail "$name: workload ready"
		return
	fi
	pid=$WL_PID
	CRIU_TIMEOUT=300 criu_dump "$img" "$pid"
	rc=$?
	check "$name: dump (status $rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || criu_why "$img/dump.log" "$rc"
	check "$name: the dumped tree is gone" gpu_gone "$pid"
	t0=$(now)
	if [ -n "$mode" ]; then
		AMDGPU_CRIU_PARALLEL_RESTORE=$mode CRIU_TIMEOUT=300 criu_restore "$img"
	else
		CRIU_TIMEOUT=300 criu_restore "$img"
	fi
	rc=$?
	t1=$(now)
	log=$img/restore.log
	check "$name: restore (status $rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || criu_why "$log" "$rc"
	grep -E "amdgpu_plugin: .*(copier|handed|restored pid|BO contents moved)" "$log" | sed 's/^([^)]*) */# /' | head -6
	if [ "$mode" = 0 ]; then
		check "$name: the task wrote its own BO contents" eval '! grep -q "handed to the master" "$log"'
	else
		check "$name: the task handed its BO contents to the master's copier" \
			grep -q "amdgpu_plugin: pid [0-9]*: BO contents handed to the master's copier" "$log"
		check "$name: the copier wrote them while CRIU restored the task" \
			grep -qE "amdgpu_plugin: pid [0-9]*: the master's BO copier wrote [0-9]+ MiB" "$log"
	fi
	eval "restore_$name=$(secs "$t0" "$t1")"
	diag "$name: restore took $(secs "$t0" "$t1") s (AMDGPU_CRIU_PARALLEL_RESTORE=${mode:-unset})"
	gpu_restored "$name" "$pid" "$R.ready"
	gpu_finish "$name" "$pid"
}

cycle parallel ""
cycle serial 0
diag "restore of 192 MiB of VRAM and 192 MiB of host memory: parallel ${restore_parallel:-?} s, serial ${restore_serial:-?} s"

# a value that means nothing: refused before any task exists
if gpu_start bad --gpus 1; then
	pid=$WL_PID
	criu_dump "$WORK/img-bad" "$pid"
	AMDGPU_CRIU_PARALLEL_RESTORE=yes criu_restore "$WORK/img-bad"
	rc=$?
	check "bad: AMDGPU_CRIU_PARALLEL_RESTORE=yes refused (status $rc)" test "$rc" -ne 0
	check "bad: the plugin says which values work" \
		grep -q "AMDGPU_CRIU_PARALLEL_RESTORE=yes: unknown switch; use 1 (the default) or 0" "$WORK/img-bad/restore.log"
	check "bad: no task of it exists" eval '! alive "$pid"'
	check "bad: then restored with the default" criu_restore "$WORK/img-bad"
	gpu_finish bad "$pid"
else
	fail "bad: workload ready"
fi
tap_done
