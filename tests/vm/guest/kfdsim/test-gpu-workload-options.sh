#!/bin/sh
# The GPU workload's options without any checkpoint (tests/workloads/gpu/
# zdtm-gpu-basic): each configuration the test-cr-*.sh tests use must PASS
# on a healthy process, and every check must be able to FAIL: each
# --sabotage negative control (and a wrong "map" in TRIGGER, a wrong probe)
# must make the self-check fail and name what it found. Built-in machine
# (two GPUs) or whatever KFDSIM_PARAMS loaded (at least one GPU).
# vm-timeout: 480
. /test/lib/guest.sh

gpu_wl_missing && { tap_done; exit; }
kfdsim_debugfs || diag "no kfdsim debugfs"

# run NAME [OPTIONS...]: start, trigger, result (RESULT, RC)
run() {
	local name=$1
	shift
	if ! gpu_start "$name" "$@"; then
		fail "$name: workload ready"
		RESULT= RC=
		kill "$WL_PID" 2>/dev/null
		return 1
	fi
	gpu_trigger "${TRIGGER_TEXT:-}"
	gpu_result
	wait "$WL_PID"
	RC=$?
}

# pass NAME [OPTIONS...]: a plain run must PASS and exit 0
pass() {
	run "$@" || return
	check "$1: self-check PASS" gpu_passed
	check "$1: exit status 0" test "$RC" = 0
}

# must_fail NAME REGEX [OPTIONS...]: FAIL, exit 1, the first line matches REGEX
must_fail() {
	local name=$1 re=$2
	shift 2
	run "$name" "$@" || return
	check "$name: self-check FAIL, naming it ($re)" eval 'echo "$RESULT" | grep -qE "^FAIL.*$re"'
	check "$name: exit status 1" test "$RC" = 1
}

ngpus=$(cat /sys/class/kfd/kfd/topology/nodes/*/gpu_id 2>/dev/null | grep -vc '^0$')
diag "GPUs visible: $ngpus"

# --- configurations that must pass ---
pass default
check "default: all GPUs used" eval '[ "$(sed -n "s/^gpus \([0-9]*\) .*/\1/p" "$R.ready")" = "$ngpus" ]'
pass one-gpu --gpus 1 --render-fds --mmio
check "one-gpu: one GPU used, all visible" eval 'grep -q "^gpus 1 " "$R.ready" && [ "$(sed -n "s/^visible //p" "$R.ready" | wc -w)" = "$ngpus" ]'
if [ "$ngpus" -ge 2 ]; then
	pass second-gpu --gpus 1-1 --render-fds
	check "second-gpu: uses the second visible GPU" eval '[ "$(awk "\$1 == \"gpu\" { print \$2 }" "$R.ready")" = "$(awk "\$1 == \"visible\" { print \$3 }" "$R.ready")" ]'
fi
pass many-bos --bos 100 --render-fds --mmio
check "many-bos: over 500 BOs" eval '[ "$(sed -n "s/^gpus [0-9]* bos \([0-9]*\) .*/\1/p" "$R.ready")" -gt 500 ]'
run threads --threads 3 --render-fds --mmio &&
	check "threads: self-check PASS" gpu_passed
check "threads: the ready file lists 3 threads" eval '[ "$(grep -c "^thread " "$R.ready")" = 3 ]'
run fork --fork --render-fds --mmio &&
	check "fork: self-check PASS" gpu_passed
check "fork: result has parent PASS and child PASS" eval 'grep -qx "parent PASS" "$R.result" && grep -qx "child PASS" "$R.result"'
check "fork: the child had its own ready file" test -f "$R.ready.child"
pass svm-xnack --svm --xnack --render-fds --mmio
check "svm-xnack: READY lists 3 SVM regions and xnack 1" eval '[ "$(grep -c "^svm " "$R.ready")" = 3 ] && grep -qx "xnack 1" "$R.ready"'
pass svm-one-gpu --svm --gpus 1
pass svm-xnack-one-gpu --svm --xnack --gpus 1
run svm-fork --svm --xnack --fork &&
	check "svm-fork: self-check PASS (parent and child, each with its own ranges)" gpu_passed

# --- probes: non-destructive checks while waiting; a wrong map fails one ---
if gpu_start probe --render-fds --mmio; then
	pid=$WL_PID
	check "probe 1 PASS" gpu_probe 1
	check "fds: /proc/PID/fd is what the workload listed" gpu_fds_ok "$pid" "$R.ready"
	if kfdsim_debugfs; then
		check "debugfs: the KFD process's user gpu_ids are the visible ones" \
			eval '[ "$(kfd_user_ids "$pid")" = "$(sed -n "s/^visible //p" "$R.ready")" ]'
	fi
	g0=$(awk '$1 == "gpu" { print $2; exit }' "$R.ready")
	check "probe 2 with a wrong map (gpu $g0 behind 12345) FAIL" eval '! gpu_probe 2 "map $g0 12345"'
	check "probe 2: names the render fd" eval 'echo "$PROBE" | grep -q "render fd .* want gpu 12345"'
	check "probe 3 PASS again (probes change nothing)" gpu_probe 3
	gpu_trigger
	gpu_result
	check "probe: final self-check PASS" gpu_passed
else
	fail "probe: workload ready"
fi

# --- negative controls: each check can fail ---
must_fail sabotage-byte "(VRAM|GTT|USERPTR) BO [0-9]+ .*byte [0-9]+ is" --bos 4 --sabotage byte
must_fail sabotage-thread "thread 2: .*BO .*byte 0 is" --threads 2 --sabotage thread
must_fail sabotage-child "child FAIL .*byte" --fork --sabotage child
check "sabotage-child: parent PASS line" grep -qx "parent PASS" "$R.result"
must_fail sabotage-doorbell "doorbell of queue [0-9]+ .*not usable" --sabotage doorbell
must_fail sabotage-mmio "MMIO page of gpu [0-9]+ .*not usable" --mmio --sabotage mmio
must_fail sabotage-render-reopen "fresh VRAM BO on user gpu [0-9]+, CPU-mapped through render fd" --render-fds --sabotage render-reopen
if [ "$ngpus" -ge 2 ]; then
	must_fail sabotage-render-swap "render fd [0-9]+ of user gpu [0-9]+ is renderD[0-9]+ = gpu [0-9]+, want" --render-fds --sabotage render-swap
fi
must_fail sabotage-fd "fds: fd [0-9]+ \(/dev/null\) was not there before" --sabotage fd
must_fail sabotage-event "event [0-9]+: WAIT_EVENTS before SET" --sabotage event
must_fail sabotage-queue "DESTROY_QUEUE [0-9]+ .*Invalid argument" --sabotage queue
must_fail sabotage-map "BO 0 .*UNMAP on its [0-9]+ GPUs: Invalid argument" --sabotage map
must_fail sabotage-apertures "apertures: device [0-9]+ is gpu_id" --sabotage apertures
must_fail sabotage-svm "SVM region 1 page 0 .*: GRANULARITY is 0x7, want 0x0" --svm --sabotage svm
must_fail sabotage-svm-byte "SVM region 2 at .*: byte 1048575 is" --svm --sabotage svm-byte
must_fail sabotage-xnack "XNACK mode is 0, want 1" --svm --xnack --sabotage xnack
must_fail sabotage-xnack-off "XNACK mode is 1, want 0" --sabotage xnack
g0=$(awk '$1 == "gpu" { print $2; exit }' "$WORK/default.ready")
TRIGGER_TEXT="map $g0 4242" must_fail wrong-map "render fd [0-9]+ of user gpu $g0 is renderD[0-9]+ = gpu $g0, want gpu 4242" --render-fds

# --- --big-bo: the negative controls on a 64 MiB BO (its checks do not
# depend on the size); one over 4 GiB must PASS when the guest has the RAM
# (kfdsim's shmem helper allocates all of it at mmap) ---
must_fail sabotage-big-bo "big VRAM BO .* page [0-9]+: byte 4095 is" --gpus 1 --big-bo 64M --sabotage big-bo
must_fail sabotage-big-bo-zero "big VRAM BO: untouched page [0-9]+ byte 100 is 0xff, want 0" --gpus 1 --big-bo 64M --sabotage big-bo-zero
big=${GPU_BIG_BO:-4160M}
need_kb=$(( (${big%M} + 512) * 1024 ))
avail_kb=$(sed -n 's/^MemAvailable: *\([0-9]*\) kB/\1/p' /proc/meminfo)
if [ "$avail_kb" -ge "$need_kb" ]; then
	GPU_READY_SECS=300 pass big-bo --gpus 1 --big-bo "$big"
else
	ok "big-bo: --big-bo $big # SKIP MemAvailable $avail_kb kB < $need_kb kB (VM_MEM)"
fi
check "no workload, criu or KFD process left" gpu_no_strays
tap_done
