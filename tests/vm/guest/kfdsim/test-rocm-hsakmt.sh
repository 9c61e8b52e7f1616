#!/bin/sh
# vm-boot: rocm
# vm-timeout: 360
# A process on Debian's libhsakmt (tests/workloads/rocm/rocm-hsakmt: VRAM
# with and without host access, GTT, userptr, signal events, an AQL queue
# whose EOP buffer and save area the thunk made) dumped and restored with the
# plugin (no --link-remap), then re-checked by itself (every byte, its
# PROT_NONE render-node mappings, events, queues; new allocations and queues
# after the restore). libhsakmt's /dev/shm files (plugin/hsakmt_files.h):
#   same     same GPUs. The process created the semaphore (the dump needs no
#            --link-remap); after the dump a 100-byte hsakmt_shared_mem is
#            put in place: the restore is refused in one line and nothing
#            runs; with both files gone (another node, a reboot) the restore
#            creates the shared memory (the semaphore, nameless since the
#            dump, comes back with the process as CRIU's ghost file)
#   other    onto the other GPU (a device cgroup shows GPU A, then GPU B);
#            the shared memory exists at the restore with other contents
#   machine  dumped on the boot's machine, restored on 2 of the MI210
#            machine's 8 GPUs (2 CPU nodes), /dev/shm emptied in between
#   two      two thunk processes at once: the first is dumped and restored
#            while the second runs (and holds the shared memory), then the
#            second is dumped and restored; a byte of the second's memory
#            flipped after its restore must make its self-check FAIL
#            (negative control)
. /test/lib/guest.sh

GPU_WL=/test/bin/rocm-hsakmt
SHM=/dev/shm/hsakmt_shared_mem
SEM=/dev/shm/sem.hsakmt_semaphore
gpu_wl_missing && { tap_done; exit; }
kfdsim_debugfs || true

plugin_line() { grep -o "amdgpu_plugin: .*$1.*" "$2" | head -1 | sed 's/^/# /'; }

# --- same --- (libhsakmt makes its files anew: none left by an earlier test)
rm -f $SHM $SEM
if gpu_start same; then
	pid=$WL_PID img=$WORK/img-same
	check "same: the workload uses both GPUs" grep -q '^gpus 2$' "$R.ready"
	check "same: libhsakmt made its shared memory and semaphore" test -f $SHM -a -f $SEM
	gpu_dump_ok same "$img" "$pid"
	check "same: the plugin unlinked the semaphore's name the process created" \
		grep -q "pid $pid created libhsakmt's semaphore" "$img/dump.log"
	plugin_line "libhsakmt" "$img/dump.log"
	rm -f $SHM $SEM
	head -c 100 /dev/zero >$SHM
	criu_restore "$img"
	rc=$?
	check "same: a 100-byte $SHM here: restore refused (status $rc)" test "$rc" -ne 0
	check "same: the refusal names the file and what to do" \
		grep -q "$SHM exists here as a file of 100 bytes.*remove it" "$img/restore.log"
	plugin_line "exists here" "$img/restore.log"
	check "same: nothing of the refused restore runs" eval "! alive $pid && no_criu"
	rm -f $SHM $SEM
	gpu_restore_ok same "$img"
	check "same: the plugin created the shared memory again" \
		grep -q "1 of libhsakmt's shared files were missing here: created" "$img/restore.log"
	check "same: $SHM is back with its 8 bytes" eval '[ "$(stat -c %s $SHM)" = 8 ]'
	check "same: the semaphore came back with the process, nameless (CRIU's ghost file)" \
		eval 'grep -q "/dev/shm/sem\.[^ ]* (deleted)\$" /proc/$pid/maps && test ! -e $SEM'
	gpu_restored same "$pid" "$R.ready"
	gpu_finish same "$pid"
	check "same: hsaKmtCloseKFD removed both files after the self-check" test ! -e $SHM -a ! -e $SEM
else
	fail "same: workload ready"
fi

# --- other: GPU A (first) for the dump, GPU B (second) for the restore ---
kfd_gpu_table >"$WORK/gpus"
min_a=$(awk 'NR == 1 { print $3 }' "$WORK/gpus")
min_b=$(awk 'NR == 2 { print $3 }' "$WORK/gpus")
id_a=$(awk 'NR == 1 { print $2 }' "$WORK/gpus")
if ! gpu_cg_make rocmjob; then
	ok "other # SKIP no cgroup v1 devices controller"
elif gpu_cg_expose rocmjob "$WORK/gpus" "$min_a" && GPU_WRAP="sh $WORK/cg-rocmjob.sh" gpu_start other; then
	pid=$WL_PID img=$WORK/img-other
	check "other: the workload sees one GPU (gpu_id $id_a)" eval '[ "$(kfd_user_ids "$pid")" = "$id_a" ]'
	gpu_dump_ok other "$img" "$pid"
	gpu_cg_expose rocmjob "$WORK/gpus" "$min_b"
	printf 'XXXXXXXX' >$SHM
	CRIU_WRAP="sh $WORK/cg-rocmjob.sh" gpu_restore_ok other "$img"
	check "other: an existing $SHM is left as it was" eval '[ "$(cat $SHM)" = XXXXXXXX ]'
	gpu_restored other "$pid" "$R.ready"
	check "other: the KFD process keeps user gpu_id $id_a" eval '[ "$(kfd_user_ids "$pid")" = "$id_a" ]'
	check "other: its render fd is GPU B's node now (renderD$min_b)" \
		eval 'ls -l /proc/$pid/fd | grep -q "renderD$min_b\$" && ! ls -l /proc/$pid/fd | grep -q "renderD$min_a\$"'
	gpu_finish other "$pid"
else
	fail "other: workload ready in a cgroup that shows GPU A"
fi
gpu_cg_remove rocmjob
rm -f $SHM $SEM

# --- machine: dumped on the boot's 2 GPUs, restored on 2 of the MI210's 8 ---
# (a device cgroup shows the boot machine's GPUs, then hive B's last two)
DESC=/test/kfdsim/machines/mi210.desc
if [ ! -f "$DESC" ]; then
	ok "machine # SKIP no $DESC"
elif ! gpu_cg_make rocmmach; then
	ok "machine # SKIP no cgroup v1 devices controller"
elif GPU_WRAP="sh $WORK/cg-rocmmach.sh" gpu_start machine; then
	pid=$WL_PID img=$WORK/img-machine
	ids=$(kfd_user_ids "$pid")
	gpu_dump_ok machine "$img" "$pid"
	rm -f $SHM $SEM
	gpu_restore_on_machine machine "$img" "$pid" "$ids" "$DESC" rocmmach
	gpu_finish machine "$pid"
	check "kfdsim loaded again as the boot loaded it" kfdsim_reload
else
	fail "machine: workload ready"
fi
gpu_cg_remove rocmmach
rm -f $SHM $SEM

# --- two thunk processes at once ---
if gpu_start two-a && pa=$WL_PID && ra=$R && gpu_start two-b; then
	pb=$WL_PID rb=$R
	gpu_dump_ok "two, first" "$WORK/img-two-a" "$pa"
	check "two: the second (running) still has $SHM open" eval 'ls -l /proc/$pb/fd | grep -q hsakmt_shared_mem'
	gpu_restore_ok "two, first (the second runs)" "$WORK/img-two-a"
	gpu_dump_ok "two, second" "$WORK/img-two-b" "$pb"
	gpu_restore_ok "two, second" "$WORK/img-two-b"
	# negative control: one byte of the second's userptr memory flipped
	addr=$(awk '$1 == "buf" && $2 == "userptr" && $3 == 0 { print $4 }' "$rb.ready")
	check "two: negative control: a byte of the second's userptr memory flipped" \
		/test/bin/zdtm-gpu-basic --poke "$pb" $((addr + 4100))
	R=$ra
	gpu_trigger
	R=$rb
	gpu_trigger
	R=$ra
	gpu_result
	check "two, first: self-check PASS" gpu_passed
	R=$rb
	gpu_result
	check "two, second: its self-check FAILs naming that byte" \
		eval 'echo "$RESULT" | grep -q "^FAIL gpu 0: userptr: byte 4100 differs"'
	rm -f "$KEEP/two-b".*
	check "two: both ended" gpu_gone "$pa" "$pb"
	check "two: no workload, criu or KFD process left" gpu_no_strays
else
	fail "two: both workloads ready"
fi
tap_done
