#!/bin/sh
# Interrupted runs. A GPU process with a 2 GiB VRAM BO (--gpus 1 --big-bo
# 2048M; its pages are mostly zero, so the image stays small) is dumped
# once in full (--leave-running, for the time it takes), then three dumps
# are killed while the plugin streams that BO (criu gets SIGKILL, SIGTERM,
# SIGINT when the BO contents file appears): CRIU runs no plugin hook then,
# so the plugin's guardian (plugin/dump/dump_guard.h) unpauses the application:
# it runs on, its KFD process unpaused with its queues active, within
# seconds (time to die and unpause latency printed), its probe PASSes, no
# criu or guardian is left, the kernel log has the guardian's line, and
# the half-written image directory is refused as incomplete by `amdgpu-criu
# inspect --verify` and by `criu restore`. Negative control: criu and the
# guardian both killed, the application stays paused.
# Then `criu restore` of a complete checkpoint (a 256 MiB BO) is killed at
# three stages: right after the master's checks, while the task writes the
# BO contents (its KFD process exists), and once the task has restored its
# files (before RESUME). After each: the restore's guardian
# (plugin/restore/restore_guard.h) kills the tasks CRIU left: no restored task,
# criu or KFD process is left, the pid is free, no kfdsim file open, every image file as
# dumped; last, the restore of the same images succeeds and PASSes.
# vm-boot: big
# vm-timeout: 1200
. /test/lib/guest.sh

gpu_wl_missing && { tap_done; exit; }
if ! kfdsim_debugfs; then
	ok "interrupt # SKIP no kfdsim debugfs"
	tap_done
	exit
fi
need_kb=$((3 * 1024 * 1024))
avail_kb=$(sed -n 's/^MemAvailable: *\([0-9]*\) kB/\1/p' /proc/meminfo)
if [ "$avail_kb" -lt "$need_kb" ]; then
	ok "interrupt # SKIP MemAvailable $avail_kb kB < $need_kb kB (VM_MEM)"
	tap_done
	exit
fi

# uptime in hundredths of a second; secs FROM TO: "S.SS"
now() { awk '{ printf "%d\n", $1 * 100 }' /proc/uptime; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b - a) / 100 }'; }
# criu_pids: pids of every process named criu (criu itself, the guardian)
criu_pids() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = criu ] && alive "${p#/proc/}" && echo "${p#/proc/}"
	done
}
# a background job of a script has SIGINT ignored: sigdfl resets it
SIGDFL=/test/bin/sigdfl
[ -x "$SIGDFL" ] || SIGDFL=
guardian_lines() { dmesg | grep -c "amdgpu_plugin: criu died during the dump of pid $1; unpaused"; }

if ! GPU_READY_SECS=300 gpu_start intr --gpus 1 --big-bo 2048M --render-fds; then
	fail "intr: workload ready"
	tap_done
	exit
fi
pid=$WL_PID
probe=0
app_ok() {
	probe=$((probe + 1))
	check "$1: the application still runs" alive "$pid"
	check "$1: it has exactly its fds" gpu_fds_ok "$pid" "$R.ready"
	check "$1: its probe PASSes" gpu_probe "$probe"
	check "$1: no criu process (nor guardian) left" wait_until 10 eval '[ -z "$(criu_pids)" ]'
}

t0=$(now)
CRIU_TIMEOUT=300 criu_dump "$WORK/img-full" "$pid" --leave-running
rc=$?
t1=$(now)
check "full: dump --leave-running of the 2 GiB BO (status $rc) in $(secs "$t0" "$t1") s" test "$rc" -eq 0
grep -E 'amdgpu_plugin: dumped' "$WORK/img-full/dump.log" | sed 's/^([^)]*) */# /'
check "full: its queues run again" wait_until 10 kfd_running "$pid"
app_ok full
check "full: inspect --verify takes the full dump as intact" amdgpu-criu inspect --verify "$WORK/img-full"
rm -rf "$WORK/img-full"

# cut SIG: a dump killed with SIG while the BO contents stream
cut() {
	local sig=$1 img=$WORK/img-$1 cpid tk td tu lines rc
	rm -rf "$img"
	mkdir -p "$img"
	lines=$(guardian_lines "$pid")
	# sigdfl: a background job of this shell would have SIGINT ignored
	$SIGDFL criu dump -t "$pid" -D "$img" -v4 -o dump.log &
	cpid=$!
	if ! wait_until 120 eval 'ls "$img"/amdgpu-bo-*.img >/dev/null 2>&1'; then
		fail "$sig: the BO contents never started streaming"
		wait "$cpid"
		return
	fi
	tk=$(now)
	kill -"$sig" "$cpid"
	wait "$cpid"
	rc=$?
	td=$(now)
	check "$sig: criu ended by SIG$sig while streaming (status $rc, $(secs "$tk" "$td") s after the signal)" test "$rc" -ne 0
	check "$sig: the plugin had not finished (no 'dumped' line)" eval '! grep -q "amdgpu_plugin: dumped" "$img/dump.log"'
	if wait_until 30 kfd_running "$pid"; then
		tu=$(now)
		ok "$sig: the application's queues run again, $(secs "$tk" "$tu") s after the signal"
	else
		fail "$sig: the application's queues run again"
		diag "$(kfd_state "$pid")"
	fi
	check "$sig: the guardian said so in the kernel log" eval '[ "$(guardian_lines "$pid")" -gt "$lines" ]'
	dmesg | grep 'amdgpu_plugin: criu died' | tail -1 | sed 's/^/# /'
	app_ok "$sig"
	ls "$img" | tr '\n' ' ' | sed 's/^/# left: /'
	echo
	amdgpu-criu inspect --verify "$img" >"$WORK/verify.out" 2>&1
	rc=$?
	sed 's/^/# verify: /' "$WORK/verify.out"
	check "$sig: inspect --verify refuses the cut directory (status $rc)" test "$rc" -ne 0
	check "$sig: ... saying it is incomplete and naming a file" grep -qE 'incomplete.*amdgpu-' "$WORK/verify.out"
	rm -f "$img/restore.log"
	criu_restore "$img" >/dev/null 2>&1
	rc=$?
	check "$sig: criu restore of the cut directory fails (status $rc)" test "$rc" -ne 0
	grep -E 'Error|amdgpu_plugin: Error' "$img/restore.log" 2>/dev/null | head -2 | sed 's/^/# restore: /'
	check "$sig: the application is untouched by it" alive "$pid"
	[ "$TAP_FAILED" -eq 0 ] || keep "$img/dump.log" "$img/restore.log"
	rm -rf "$img"
}
cut KILL
cut TERM
cut INT

# negative control: criu and its guardian both killed: nothing unpauses
img=$WORK/img-nc
rm -rf "$img"
mkdir -p "$img"
criu dump -t "$pid" -D "$img" -v4 -o dump.log &
cpid=$!
if wait_until 120 eval 'ls "$img"/amdgpu-bo-*.img >/dev/null 2>&1'; then
	# shellcheck disable=SC2046
	kill -9 $(criu_pids | sort -rn) # the guardian (forked later: higher pid) first
	wait "$cpid"
	check "control: without the guardian the queues stay stopped" eval '! wait_until 5 kfd_running "$pid"'
else
	fail "control: the BO contents never started streaming"
fi
kill -9 "$pid"
gpu_gone "$pid"
rm -rf "$img"
check "intr: no workload, criu or KFD process left" gpu_no_strays

# restore killed at each stage (a 256 MiB BO: its contents take a while)
if ! GPU_READY_SECS=300 gpu_start rk --gpus 1 --big-bo 256M; then
	fail "rk: workload ready"
	tap_done
	exit
fi
pid=$WL_PID
img=$WORK/img
CRIU_TIMEOUT=300 criu_dump "$img" "$pid"
rc=$?
check "rk: dump (status $rc)" test "$rc" -eq 0
check "rk: the dumped process is gone" gpu_gone "$pid"
check "rk: no KFD process left" wait_until 10 kfd_no_processes
gpu_img_sums "$img" >"$WORK/sums"

# stage_master / stage_contents / stage_files: when to kill
stage_master() { grep -q 'amdgpu_plugin: restoring ' "$img/restore.log" 2>/dev/null; }
stage_contents() { kfd_state "$pid" >/dev/null; }
stage_files() { grep -q "amdgpu_plugin: restored pid $pid " "$img/restore.log" 2>/dev/null; }
kill_restore() {
	local name=$1 cpid t
	rm -f "$img/restore.log"
	criu restore -D "$img" -d -v4 -o restore.log &
	cpid=$!
	if wait_until 120 "stage_$name"; then
		kill -9 "$cpid"
		t=$(now)
		ok "$name: criu restore killed at that stage"
	else
		fail "$name: the stage was reached"
	fi
	wait "$cpid"
	# the guardian kills what the master left; a task busy in the kernel
	# (populating a BO) dies when it leaves it
	if wait_until 60 eval '[ -z "$(criu_pids)" ] && ! pidof zdtm-gpu-basic >/dev/null'; then
		ok "$name: the tasks ended, $(secs "$t" "$(now)") s after the kill"
	else
		fail "$name: the tasks ended"
	fi
	dmesg | grep 'amdgpu_plugin: criu died during the restore' | tail -1 | sed 's/^/# /'
	check "$name: no restored task, criu or KFD process left" gpu_no_strays
	[ "$TAP_FAILED" -eq 0 ] || { diag "ps: $(ps -o pid,stat,comm 2>/dev/null | tr '\n' ';')"; kfd_holders | sed 's/^/# holder: /'; }
	check "$name: the pid is free again" wait_until 10 eval '[ ! -d /proc/$pid ]'
	check "$name: no file of kfdsim open anywhere" kfdsim_idle
	check "$name: every image file as dumped (sha256)" eval 'gpu_img_sums "$img" | cmp -s - "$WORK/sums"'
	[ "$TAP_FAILED" -eq 0 ] || keep "$img/restore.log"
	# what is left is killed, so that the next stage starts clean
	kill -9 $(criu_pids) "$pid" 2>/dev/null
	gpu_gone "$pid"
}
kill_restore master
kill_restore contents
kill_restore files

rm -f "$img/restore.log"
CRIU_TIMEOUT=300 criu_restore "$img"
rc=$?
check "retry: restore after the killed ones (status $rc)" test "$rc" -eq 0
gpu_restored retry "$pid" "$R.ready"
gpu_finish retry "$pid"
check "kfdsim: no file of it open any more" kfdsim_idle
tap_done
