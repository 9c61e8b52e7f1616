# shellcheck shell=sh
# Guest library of test-rocm-hsa and test-rocm6-hsa (copied to
# /test/lib/rocm_cr.sh): a ROCr process (tests/workloads/rocm/rocm-hsa)
# dumped and restored with the plugin, then re-checked by itself. The caller
# sets:
#   ROCM_HSA          the workload's build
#   ROCM_HSA_ARGS     options for it
#   ROCM_HSA_RUNTIME  the debug runtime state its ROCr leaves (kfdsim debugfs
#                     "runtime=": ROCr 6.x enables it at hsa_init, 5.2.3
#                     knows no such call)
# Scenarios:
#   plain    no checkpoint: the self-check alone (its control)
#   leave    `criu dump --leave-running`, the process goes on; a second
#            dump (the first image set stays), restore of the second; the
#            scratch VA, trap handler and debug runtime ROCr set are gone
#            after the restore, as in KFD (kfdsim/settings.c)
#   machine  dumped on the boot's machine (2 GPUs), restored on 2 of the
#            MI210 machine's 8 GPUs (2 CPU nodes)
# The workload exits without hsaKmtCloseKFD, so libhsakmt's /dev/shm files
# are removed at the end.

# shellcheck disable=SC2034 # read by guest.sh's gpu_* functions
GPU_WL=$ROCM_HSA
DESC=/test/kfdsim/machines/mi210.desc
gpu_wl_missing && { tap_done; exit; }
kfdsim_debugfs || true

# settings PID: kfdsim's per-GPU settings of PID's KFD process (debugfs
# "settings=": policy/scratch VA/trap TBA/trap TMA per GPU)
settings() { kfd_state "$1" | sed -n 's/.* settings=\([^ ]*\).*/\1/p'; }
# runtime PID: "enabled" or "disabled" (RUNTIME_ENABLE)
runtime() { kfd_state "$1" | sed -n 's/.* runtime=\([a-z]*\).*/\1/p'; }

# --- plain ---
# shellcheck disable=SC2086 # ROCM_HSA_ARGS is a list of options
if gpu_start plain ${ROCM_HSA_ARGS:-}; then
	gpu_finish plain "$WL_PID"
else
	fail "plain: workload ready"
fi

# --- leave ---
# shellcheck disable=SC2086 # ROCM_HSA_ARGS is a list of options
if gpu_start leave ${ROCM_HSA_ARGS:-}; then
	pid=$WL_PID
	sed -n 's/^gpu /# agent: /p' "$R.ready"
	check "leave: ROCr shows both GPUs as agents" grep -q '^gpus 2$' "$R.ready"
	before=$(settings "$pid")
	diag "leave: settings before the dump: $before"
	check "leave: ROCr set a scratch backing VA and a trap handler on each GPU" \
		eval 'echo "$before" | tr "," "\n" | awk -F/ "\$3 == \"0x0\" || \$4 == \"0x0\" { bad = 1 } END { exit bad || NR != 2 }"'
	check "leave: the debug runtime is ${ROCM_HSA_RUNTIME:-disabled} before the dump" \
		test "$(runtime "$pid")" = "${ROCM_HSA_RUNTIME:-disabled}"
	criu_dump "$WORK/img-leave1" "$pid" --leave-running
	rc=$?
	check "leave: dump --leave-running (status $rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || criu_why "$WORK/img-leave1/dump.log" "$rc"
	check "leave: the process runs on, its GPU queues too" eval 'alive $pid && wait_until 10 kfd_running $pid'
	check "leave: the first dump wrote the plugin's images" eval 'ls "$WORK"/img-leave1/amdgpu-kfd-*.img >/dev/null'
	EXPECT=ok gpu_dump_restore leave "$WORK/img-leave2" "$pid"
	after=$(settings "$pid")
	diag "leave: settings after the restore: $after"
	check "leave: as in KFD, no CRIU blob carries them: the restored process has the defaults" \
		test "$after" = "-/-/0x0/0x0/0x0,-/-/0x0/0x0/0x0"
	check "leave: so is the debug runtime: disabled after the restore (the self-check says ROCr works on)" \
		test "$(runtime "$pid")" = disabled
	gpu_finish leave "$pid"
else
	fail "leave: workload ready"
fi

# --- machine: dumped on the boot's 2 GPUs, restored on 2 of the MI210's 8 ---
# KFD restores a process onto as many GPUs as it had: the workload runs in a
# device cgroup that shows it both GPUs of the boot's machine (minors 128,
# 129), and then only hive B's last two GPUs of the MI210 machine.
# shellcheck disable=SC2086 # ROCM_HSA_ARGS is a list of options
if [ ! -f "$DESC" ]; then
	ok "machine # SKIP no $DESC"
elif ! gpu_cg_make rocmhsa; then
	ok "machine # SKIP no cgroup v1 devices controller"
elif GPU_WRAP="sh $WORK/cg-rocmhsa.sh" gpu_start machine ${ROCM_HSA_ARGS:-}; then
	pid=$WL_PID img=$WORK/img-machine
	ids=$(kfd_user_ids "$pid")
	gpu_dump_ok machine "$img" "$pid"
	gpu_restore_on_machine machine "$img" "$pid" "$ids" "$DESC" rocmhsa
	gpu_finish machine "$pid"
	gpu_cg_remove rocmhsa
	check "kfdsim loaded again as the boot loaded it" kfdsim_reload
else
	fail "machine: workload ready"
fi
rm -f /dev/shm/hsakmt_shared_mem /dev/shm/sem.hsakmt_semaphore
tap_done
