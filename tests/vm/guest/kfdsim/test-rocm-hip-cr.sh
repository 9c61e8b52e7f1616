#!/bin/sh
# shellcheck disable=SC2034 # GPU_WL and GPU_READY_SECS are read by guest.sh's gpu_* functions
# vm-boot: rocm
# vm-timeout: 1800
# A HIP 6.4 process (rocm-hip, tests/workloads/rocm, on Debian testing's HIP,
# scripts/fetch-hip-testing.sh; the image leaves it out with VM_HIP=0) is
# refused at dump, as KFD 6.12 refuses it: HIP's hipMemcpy runs on ROCr
# 6.4's SDMA queues by engine id, which KFD's CRIU cannot checkpoint
# (PROCESS_INFO: EOPNOTSUPP; README "Known limits"). The refusal must be
# one line that says so, leave no image of ours, and leave the process
# running with its GPU queues: afterwards its self-check re-reads every byte
# through hipMemcpy, uses the old stream and event, allocates, copies and
# frees new VRAM and makes a new stream.
# Without SDMA queues (HSA_ENABLE_SDMA=0, GPU_FORCE_BLIT_COPY_SIZE: every
# copy is ROCclr's blit kernel on an AQL queue, which kfdsim carries out,
# tests/kfdsim/blit.c) the same process is checkpointed: dumped and
# restored on the same GPUs ("same"), dumped with --leave-running, running
# on, dumped again and restored from the second dump ("leave"), and dumped
# on the boot's 2 GPUs and
# restored on the last 2 of the MI210 machine's 8 ("machine"); each time
# its self-check re-reads every byte through hipMemcpy, allocates, copies
# and frees VRAM and creates a new stream.
. /test/lib/guest.sh
if [ ! -x /usr/lib/rocm-testing/bin/rocm-hip ]; then
	ok "rocm-hip-cr # SKIP no HIP in the image (make vm-deps: scripts/fetch-hip-testing.sh; VM_HIP=0 leaves it out)"
	tap_done
	exit
fi
GPU_WL=/usr/lib/rocm-testing/bin/rocm-hip
# HIP builds its blit kernels with comgr at start: about 20 s under TCG
GPU_READY_SECS=150
export HSA_ENABLE_IPC_MODE_LEGACY=0 HSAKMT_DEBUG_LEVEL=4
gpu_wl_missing && { tap_done; exit; }
kfdsim_debugfs || true

if gpu_start refused --size 1048576; then
	pid=$WL_PID img=$WORK/img-refused
	criu_dump "$img" "$pid"
	rc=$?
	check "refused: the dump of a HIP process with SDMA queues by engine id fails (status $rc)" \
		test "$rc" -ne 0
	line=$(grep 'a GPU queue of a type KFD cannot' "$img/dump.log" 2>/dev/null | head -1)
	diag "refused: ${line:-no refusal line in dump.log}"
	check "refused: the plugin says why in one line" test -n "$line"
	check "refused: no image of ours left" eval '! ls "$img"/amdgpu-*.img >/dev/null 2>&1'
	check "refused: the process runs on, its GPU queues too" \
		eval 'alive $pid && wait_until 10 kfd_running $pid'
	gpu_finish refused "$pid"
else
	fail "refused: workload ready"
fi

# --- without SDMA queues: HIP's copies are blit kernels on AQL queues ---
export HSA_ENABLE_SDMA=0 GPU_FORCE_BLIT_COPY_SIZE=1048576
BLIT=/sys/kernel/debug/kfdsim/blit
DESC=/test/kfdsim/machines/mi210.desc
diag "kfdsim/blit before: $(cat $BLIT 2>/dev/null)"
if gpu_start same --size 1048576; then
	pid=$WL_PID
	check "same: the process's GPU queues run" \
		eval 'wait_until 10 kfd_running $pid'
	EXPECT=ok gpu_dump_restore same "$WORK/img-same" "$pid"
	gpu_finish same "$pid"
else
	fail "same: workload ready"
fi
diag "kfdsim/blit after same: $(cat $BLIT 2>/dev/null)"
if gpu_start leave --size 1048576; then
	pid=$WL_PID
	criu_dump "$WORK/img-leave1" "$pid" --leave-running
	rc=$?
	check "leave: dump --leave-running (status $rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || criu_why "$WORK/img-leave1/dump.log" "$rc"
	check "leave: the process runs on, its GPU queues too" eval 'alive $pid && wait_until 10 kfd_running $pid'
	check "leave: the first dump wrote the plugin's images" eval 'ls "$WORK"/img-leave1/amdgpu-kfd-*.img >/dev/null'
	EXPECT=ok gpu_dump_restore leave "$WORK/img-leave2" "$pid"
	gpu_finish leave "$pid"
else
	fail "leave: workload ready"
fi
if [ ! -f "$DESC" ]; then
	ok "machine # SKIP no $DESC"
elif ! gpu_cg_make rocmhip; then
	ok "machine # SKIP no cgroup v1 devices controller"
elif GPU_WRAP="sh $WORK/cg-rocmhip.sh" gpu_start machine --size 1048576; then
	pid=$WL_PID img=$WORK/img-machine
	ids=$(kfd_user_ids "$pid")
	gpu_dump_ok machine "$img" "$pid"
	gpu_restore_on_machine machine "$img" "$pid" "$ids" "$DESC" rocmhip
	gpu_finish machine "$pid"
	gpu_cg_remove rocmhip
	check "kfdsim loaded again as the boot loaded it" kfdsim_reload
else
	fail "machine: workload ready"
fi
diag "kfdsim/blit after machine: $(cat $BLIT 2>/dev/null)"
rm -f /dev/shm/hsakmt_shared_mem /dev/shm/sem.hsakmt_semaphore
tap_done
