#!/bin/sh
# shellcheck disable=SC2034 # GPU_WL and GPU_READY_SECS are read by guest.sh's gpu_* functions
# vm-boot: rocm
# vm-timeout: 1500
# HIP IPC across two processes, checkpointed together: rocm-hip-ipc
# (tests/workloads/rocm, on Debian testing's HIP 6.4; the image leaves it
# out with VM_HIP=0) exports VRAM with hipIpcGetMemHandle in the parent and
# opens it with hipIpcOpenMemHandle in its child, HSA_ENABLE_IPC_MODE_LEGACY=0:
# ROCr's upstream-KFD path, a DMA-BUF (EXPORT_DMABUF) whose fd the exporter
# keeps and hands to the importer over a socket (IMPORT_DMABUF there).
# Without SDMA queues (HSA_ENABLE_SDMA=0, GPU_FORCE_BLIT_COPY_SIZE: HIP's
# copies are ROCclr's blit kernels, which kfdsim carries out).
#   same     both dumped together (the plugin's line names the importer's BO
#            an import of the exporter's) and restored on the same GPUs
#   copy     control: AMDGPU_CRIU_SHARED_BO=copy restores each its own
#            copy; both re-read the first pattern, but the importer misses
#            the exporter's write (what the shared restore prevents)
#   machine  dumped on the boot's 2 GPUs, restored on the last 2 of the
#            MI210 machine's 8 (other gpu_ids and render minors)
# Each time: both processes alive with exactly their fds, then both re-read
# every byte through hipMemcpy, the importer reads what the exporter writes
# after the restore and the exporter what the importer writes (one buffer,
# not two copies), both allocate, copy and free new VRAM and use a new
# stream, the importer closes its handle: PASS of both.
. /test/lib/guest.sh
if [ ! -x /usr/lib/rocm-testing/bin/rocm-hip-ipc ]; then
	ok "rocm-hip-ipc # SKIP no HIP in the image (make vm-deps: scripts/fetch-hip-testing.sh; VM_HIP=0 leaves it out)"
	tap_done
	exit
fi
GPU_WL=/usr/lib/rocm-testing/bin/rocm-hip-ipc
# HIP builds its blit kernels with comgr at start, in each process: about 20 s each under TCG
GPU_READY_SECS=300
export HSA_ENABLE_IPC_MODE_LEGACY=0 HSA_ENABLE_SDMA=0 GPU_FORCE_BLIT_COPY_SIZE=1048576
DESC=/test/kfdsim/machines/mi210.desc
gpu_wl_missing && { tap_done; exit; }
kfdsim_debugfs || true

# imported PID CHILD LOG: the plugin's dump line names CHILD's BO an import of PID's
imported() {
	grep -qE "amdgpu_plugin: pid $1's BO .* and pid $2's BO .*: restored as an import of pid $1's BO" "$3"
}

if gpu_start same --size 1048576; then
	pid=$WL_PID child=$(gpu_child_pid)
	check "same: the exporter has its importer child" test -n "$child"
	check "same: both KFD processes' queues run" \
		eval 'wait_until 10 kfd_running $pid && wait_until 10 kfd_running $child'
	EXPECT=ok gpu_dump_restore same "$WORK/img-same" "$pid"
	check "same: the dump names the importer's BO an import of the exporter's" \
		imported "$pid" "$child" "$WORK/img-same/dump.log"
	grep -m3 -E 'amdgpu_plugin: .*(import|shared)' "$WORK/img-same/dump.log" | cut -c1-220 | sed 's/^/# /'
	gpu_finish same "$pid" "$child"
else
	fail "same: workload ready"
fi
# --- control: private copies (AMDGPU_CRIU_SHARED_BO=copy): the sharing is lost ---
if gpu_start copy --size 1048576; then
	pid=$WL_PID child=$(gpu_child_pid)
	export AMDGPU_CRIU_SHARED_BO=copy
	EXPECT=ok gpu_dump_restore copy "$WORK/img-copy" "$pid"
	unset AMDGPU_CRIU_SHARED_BO
	check "copy: the dump warned that the BOs become private copies" \
		grep -qE "amdgpu_plugin: Warn: pid $pid's BO .* and pid $child's BO .*: restored as private copies" "$WORK/img-copy/dump.log"
	gpu_trigger
	gpu_result "$pid"
	check "copy: both read the first pattern back, then the importer misses the exporter's write" \
		eval 'echo "$RESULT" | grep -q "^FAIL importer: the exporter.s write, read by the importer: byte [0-9]* differs"'
	check "copy: the workload ended" gpu_gone "$pid" "$child"
	check "copy: no workload, criu or KFD process left" gpu_no_strays
	gpu_drop_images
else
	fail "copy: workload ready"
fi
if [ ! -f "$DESC" ]; then
	ok "machine # SKIP no $DESC"
elif ! gpu_cg_make rocmipc; then
	ok "machine # SKIP no cgroup v1 devices controller"
elif GPU_WRAP="sh $WORK/cg-rocmipc.sh" gpu_start machine --size 1048576; then
	pid=$WL_PID img=$WORK/img-machine child=$(gpu_child_pid)
	ids=$(kfd_user_ids "$pid")
	gpu_dump_ok machine "$img" "$pid"
	check "machine: the importer is gone too" gpu_gone "$child"
	check "machine: the dump names the importer's BO an import of the exporter's" \
		imported "$pid" "$child" "$img/dump.log"
	gpu_restore_on_machine machine "$img" "$pid" "$ids" "$DESC" rocmipc
	gpu_finish machine "$pid" "$child"
	gpu_cg_remove rocmipc
	check "kfdsim loaded again as the boot loaded it" kfdsim_reload
else
	fail "machine: workload ready"
fi
rm -f /dev/shm/hsakmt_shared_mem /dev/shm/sem.hsakmt_semaphore
tap_done
