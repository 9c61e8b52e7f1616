#!/bin/sh
# A process that opened /dev/kfd twice (--kfd-twice: two files, one KFD
# process, as KFD keeps one per address space) cannot be checkpointed: a
# second PROCESS_INFO would count an eviction that the one UNPAUSE does not
# undo, and its queues would stay stopped. The plugin must refuse the
# second file before PROCESS_INFO, with one line naming the pid, and the
# application must run on: not paused, queues active, same fds, probe PASS.
# Both a plain dump and --leave-running. (The opposite, two processes each
# with its own /dev/kfd, a child holding its parent's file too, is
# test-cr-tree: it must not be refused.)
# vm-boot: cr
. /test/lib/guest.sh

gpu_wl_missing && { tap_done; exit; }
if ! kfdsim_debugfs; then
	ok "kfd twice # SKIP no kfdsim debugfs"
	tap_done
	exit
fi
if ! gpu_start twice --mmio --render-fds --kfd-twice; then
	fail "twice: workload ready"
	tap_done
	exit
fi
pid=$WL_PID
check "twice: the workload holds two /dev/kfd fds" \
	eval '[ "$(grep -c " /dev/kfd$" "$R.ready")" = 2 ]'
check "twice: one KFD process, running" kfd_running "$pid"
n=1
for args in "" "--leave-running"; do
	img=$WORK/img$n
	# shellcheck disable=SC2086
	criu_dump "$img" "$pid" $args
	rc=$?
	check "twice: dump ${args:-plain} refused (status $rc)" test "$rc" -ne 0
	check "twice: the plugin names the second /dev/kfd file of pid $pid" \
		grep -q "amdgpu_plugin: Error: pid $pid has a second /dev/kfd file" "$img/dump.log"
	grep "amdgpu_plugin: Error" "$img/dump.log" | head -2 | sed 's/^/# /'
	check "twice: PROCESS_INFO ran once (one unpause)" \
		eval '[ "$(grep -c "amdgpu_plugin: unpaused the GPU queues of pid" "$img/dump.log")" = 1 ]'
	check "twice: the application still runs" alive "$pid"
	check "twice: its KFD process is not paused, queues active" wait_until 10 kfd_running "$pid"
	check "twice: exactly its fds" gpu_fds_ok "$pid" "$R.ready"
	check "twice: probe $n PASS" gpu_probe "$n"
	check "twice: no criu left" no_criu
	n=$((n + 1))
done
gpu_finish twice "$pid"
tap_done
