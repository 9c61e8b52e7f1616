#!/bin/sh
# vm-boot: rocm
# vm-timeout: 300
# A process on Debian's libhsakmt (tests/workloads/rocm/rocm-hsakmt: VRAM
# with and without host access, GTT, userptr, signal events, an AQL queue
# whose EOP buffer and save area the thunk made) dumped and restored with the
# plugin, then re-checked by itself (every byte, its PROT_NONE render-node
# mappings, events, queues; new allocations and queues after the restore):
#   same     on the same GPUs (both GPUs of the boot's machine)
#   other    onto the other GPU: a device cgroup shows the process GPU A
#            only, then GPU B only for the restore (CRIU restores inside it)
#   two      two thunk processes at once, each dumped and restored alone
. /test/lib/guest.sh

GPU_WL=/test/bin/rocm-hsakmt
gpu_wl_missing && { tap_done; exit; }
kfdsim_debugfs || true

# one_cycle NAME [DUMP_ARGS...]: dump and restore $WL_PID, then its self-check
one_cycle() {
	local name=$1 pid=$WL_PID
	shift
	EXPECT=ok gpu_dump_restore "$name" "$WORK/img-$name" "$pid" "$@"
	gpu_finish "$name" "$pid"
}

if gpu_start same; then
	check "same: the workload uses both GPUs" grep -q '^gpus 2$' "$R.ready"
	one_cycle same
else
	fail "same: workload ready"
fi

# other: GPU A (node 1) only for the dump, GPU B (node 2) only for the restore
kfd_gpu_table >"$WORK/gpus"
min_a=$(awk 'NR == 1 { print $3 }' "$WORK/gpus")
min_b=$(awk 'NR == 2 { print $3 }' "$WORK/gpus")
id_a=$(awk 'NR == 1 { print $2 }' "$WORK/gpus")
id_b=$(awk 'NR == 2 { print $2 }' "$WORK/gpus")
if ! gpu_cg_make rocmjob; then
	ok "other # SKIP no cgroup v1 devices controller"
elif gpu_cg_expose rocmjob "$WORK/gpus" "$min_a" && GPU_WRAP="sh $WORK/cg-rocmjob.sh" gpu_start other; then
	pid=$WL_PID
	check "other: the workload sees one GPU (gpu_id $id_a)" eval '[ "$(kfd_user_ids "$pid")" = "$id_a" ]'
	criu_dump "$WORK/img-other" "$pid"
	rc=$?
	check "other: dump (status $rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || criu_why "$WORK/img-other/dump.log" "$rc"
	check "other: the dumped process is gone" gpu_gone "$pid"
	gpu_cg_expose rocmjob "$WORK/gpus" "$min_b"
	CRIU_WRAP="sh $WORK/cg-rocmjob.sh" criu_restore "$WORK/img-other"
	rc=$?
	check "other: restore onto GPU B inside the cgroup (status $rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || criu_why "$WORK/img-other/restore.log" "$rc"
	gpu_restored other "$pid" "$R.ready"
	check "other: the KFD process keeps user gpu_id $id_a" eval '[ "$(kfd_user_ids "$pid")" = "$id_a" ]'
	check "other: its render fd is now GPU B's node (renderD$min_b)" \
		eval 'ls -l /proc/$pid/fd | grep -q "renderD$min_b\$" && ! ls -l /proc/$pid/fd | grep -q "renderD$min_a\$"'
	gpu_finish other "$pid"
else
	fail "other: workload ready in a cgroup that shows GPU A"
fi
gpu_cg_remove rocmjob

# two thunk processes at once (they share libhsakmt's /dev/shm files)
if gpu_start two-a && pa=$WL_PID && ra=$R && gpu_start two-b; then
	pb=$WL_PID rb=$R
	criu_dump "$WORK/img-two-a" "$pa"
	rc=$?
	check "two: dump of the first (status $rc), the second still running" test "$rc" -eq 0 -a -d /proc/$pb
	[ "$rc" -eq 0 ] || criu_why "$WORK/img-two-a/dump.log" "$rc"
	criu_dump "$WORK/img-two-b" "$pb"
	rc=$?
	check "two: dump of the second (status $rc)" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || criu_why "$WORK/img-two-b/dump.log" "$rc"
	for x in a b; do
		criu_restore "$WORK/img-two-$x"
		rc=$?
		check "two: restore of the $x process (status $rc)" test "$rc" -eq 0
		[ "$rc" -eq 0 ] || criu_why "$WORK/img-two-$x/restore.log" "$rc"
	done
	R=$ra
	gpu_finish two-a "$pa"
	R=$rb
	gpu_finish two-b "$pb"
else
	fail "two: both workloads ready"
fi
tap_done
