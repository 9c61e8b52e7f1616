#!/bin/sh
# GPU memory shared through a dma-buf (ROCr's IPC on ROCm 6.1+), restored
# shared (plugin/dump/bo_share.h, plugin/restore/restore_share.h): KFD's RESTORE alone
# would give every sharer a private copy. zdtm-gpu-share exports a VRAM BO
# (AMDKFD_IOC_EXPORT_DMABUF) and imports it (AMDKFD_IOC_IMPORT_DMABUF); at
# the dump nobody holds a dma-buf fd, only the KFD BOs that are one buffer.
# Its self-check: the pattern is there, the importer sees it, a write by
# either is seen by the other, and the importer frees its import with the
# KFD handle it had (it has a free handle slot below it).
#   share    parent exports, child imports on the same GPU: dumped (the
#            plugin's line names both BOs), restored, PASS
#   hold     the parent keeps its dma-buf fd open and a third process holds
#            it too (--keep-fd --holder; one open file): restored as an fd
#            of the parent's new BO; the holder's write through it is seen by the
#            exporter and through the kept fd, PASS
#   outside  the holder dumped alone (its dma-buf's BO outside the dump), and
#            the tree with AMDGPU_CRIU_SHARED_BO=copy: both refused
#   remap    the same dumped on the boot's two GPUs and restored on two of
#            the MI210 machine's eight (other gpu_ids and minors), PASS
#   refuse   AMDGPU_CRIU_SHARED_BO=refuse: the dump is refused, the tree
#            runs on, neither KFD process paused, PASS
#   two-gpus one process imports its own BO on a second GPU (a GTT BO
#            there that shares the VRAM's pages): dumped, restored, PASS
#   policy   AMDGPU_CRIU_SHARED_BO=bogus: the dump fails, the line says why
#   options-file  refuse set in an options file (AMDGPU_CRIU_CONFIG), not in
#            the environment: refused as above; a file with an unknown
#            option fails the dump, naming the file and line
# Control: AMDGPU_CRIU_SHARED_BO=copy lets the dump through as private
# BOs; the restore then gives each process a private copy, and the
# self-check must FAIL ("the exporter does not see the importer's write"):
# what the sharing restore prevents.
# vm-boot: cr
# vm-timeout: 300
. /test/lib/guest.sh

SHARE_WL=/test/bin/zdtm-gpu-share
if [ ! -x "$SHARE_WL" ] || [ ! -c /dev/kfd ]; then
	ok "share # SKIP $SHARE_WL or /dev/kfd missing"
	tap_done
	exit
fi
kfdsim_debugfs || diag "no kfdsim debugfs"
ONE_BUFFER="are one buffer \(the same dma-buf: one was imported from the other, AMDKFD_IOC_IMPORT_DMABUF\)"

# share_refused NAME A B: the running workload's (WL_PID) dump refused with
# the plugin's line naming the BOs of pids A and B ("pid A's BO ... and pid
# B's BO ... are one buffer"); both run on, their KFD processes unpaused
share_refused() {
	local name=$1 a=$2 b=$3 rc img=$WORK/img-$1 p
	criu_dump "$img" "$WL_PID"
	rc=$?
	check "$name: dump refused (status $rc)" test "$rc" -ne 0
	grep -m1 'amdgpu_plugin: Error: pid' "$img/dump.log" | cut -c1-400 | sed 's/^/# /'
	check "$name: the plugin's line names pid $a's and pid $b's BOs as one buffer" \
		grep -qE "amdgpu_plugin: Error: pid $a's BO at 0x[0-9a-f]+ \([0-9]+ KiB of VRAM, GPU [0-9]+\) and pid $b's BO at 0x[0-9a-f]+ \([0-9]+ KiB of (VRAM|GTT), GPU [0-9]+\) $ONE_BUFFER[:,] .*refused" "$img/dump.log"
	for p in $a $b; do
		check "$name: pid $p runs on" alive "$p"
		check "$name: pid $p's KFD process is not paused" eval 'kfd_state "$p" | grep -q " paused=0 "'
	done
}

# --- share: two processes, restored shared ---
if GPU_WL=$SHARE_WL gpu_start share; then
	pid=$WL_PID
	child=$(gpu_child_pid)
	check "share: the workload has a child" test -n "$child"
	EXPECT=ok gpu_dump_restore share "$WORK/img-share" "$pid"
	# CRIU dumps the parent's files first: the child's BO is the import
	check "share: the dump names the child's BO an import of the parent's" \
		grep -qE "amdgpu_plugin: pid $pid's BO .* and pid $child's BO .* $ONE_BUFFER: restored as an import of pid $pid's BO" "$WORK/img-share/dump.log"
	grep -m3 -E 'amdgpu_plugin: .*(shared|free handle slots)' "$WORK/img-share/restore.log" | cut -c1-200 | sed 's/^/# /'
	check "share: the restore made the import again, keeping its handle" \
		grep -q "amdgpu_plugin: pid $child GPU [0-9]*: 1 free handle slots filled for a moment to keep the imports' handles" "$WORK/img-share/restore.log"
	amdgpu-criu inspect "$WORK/img-share" >"$WORK/inspect-share.txt" 2>&1
	grep -E '^amdgpu-kfd|shared:' "$WORK/inspect-share.txt" | sed 's/^/# /'
	check "share: amdgpu-criu inspect says one BO is an import of another in the checkpoint" \
		eval '[ "$(grep -c "^  shared:    1 BO is an import of another BO in this checkpoint (dma-buf IPC), restored as one$" "$WORK/inspect-share.txt")" = 1 ]'
	gpu_finish share "$pid" "$child"
else
	fail "share: workload ready"
fi

# --- hold: the exporter keeps its dma-buf fd, a third process holds one too ---
if GPU_WL=$SHARE_WL gpu_start hold --keep-fd --holder; then
	pid=$WL_PID
	child=$(gpu_child_pid)
	holder=$(sed -n 's/^holder //p' "$R.ready")
	check "hold: the workload has a holder" test -n "$holder"
	EXPECT=ok gpu_dump_restore hold "$WORK/img-hold" "$pid"
	# the parent's fd and the one it passed to the holder are one open file: CRIU dumps it once
	check "hold: the dump recorded the dma-buf file as one of the parent's BO" \
		eval '[ "$(grep -c "amdgpu_plugin: dma-buf file [0-9]*: pid $pid.s BO at 0x[0-9a-f]* (GPU [0-9]*, share [0-9]*)" "$WORK/img-hold/dump.log")" = 1 ]'
	grep -E 'amdgpu_plugin: dma-buf file' "$WORK/img-hold/restore.log" | cut -c1-200 | sed 's/^/# /'
	check "hold: the restore made it an fd of the parent's new BO" \
		eval '[ "$(grep -c "amdgpu_plugin: dma-buf file [0-9]*: share [0-9]*, from pid $pid" "$WORK/img-hold/restore.log")" = 1 ]'
	check "hold: restored holder $holder alive" alive "$holder"
	check "hold: restored holder $holder has exactly its own fds" gpu_fds_ok "$holder" "$R.ready.holder"
	gpu_finish hold "$pid" "$child" "$holder"
else
	fail "hold: workload ready"
fi

# --- outside: a dma-buf fd whose BO no dumped process has ---
if GPU_WL=$SHARE_WL gpu_start outside --holder; then
	pid=$WL_PID
	child=$(gpu_child_pid)
	holder=$(sed -n 's/^holder //p' "$R.ready")
	# the holder alone: the exporter is outside the dump
	criu_dump "$WORK/img-outside" "$holder"
	rc=$?
	check "outside: the holder's dump is refused (status $rc)" test "$rc" -ne 0
	check "outside: the plugin says its dma-buf is of no BO of the dump" \
		grep -q "amdgpu_plugin: Error: file [0-9]* is a dma-buf of no KFD BO the dump has met so far" "$WORK/img-outside/dump.log"
	check "outside: the holder runs on" alive "$holder"
	# private copies cannot keep a dma-buf fd shared either
	AMDGPU_CRIU_SHARED_BO=copy criu_dump "$WORK/img-outside-copy" "$pid"
	rc=$?
	check "outside: with AMDGPU_CRIU_SHARED_BO=copy the tree's dump is refused (status $rc)" test "$rc" -ne 0
	check "outside: the plugin says copies cannot keep the dma-buf fd" \
		grep -q "amdgpu_plugin: Error: file [0-9]* is a dma-buf of a KFD BO, which AMDGPU_CRIU_SHARED_BO=refuse or copy does not restore shared" "$WORK/img-outside-copy/dump.log"
	gpu_finish outside "$pid" "$child" "$holder"
else
	fail "outside: workload ready"
fi

# --- remap: dumped on the boot's 2 GPUs, restored shared on 2 of the MI210 machine's 8 ---
DESC=/test/kfdsim/machines/mi210.desc
if [ ! -f "$DESC" ]; then
	ok "remap # SKIP no $DESC"
elif ! gpu_cg_make share; then
	ok "remap # SKIP no cgroup v1 devices controller"
elif GPU_WL=$SHARE_WL GPU_WRAP="sh $WORK/cg-share.sh" gpu_start remap; then
	pid=$WL_PID
	child=$(gpu_child_pid)
	ids=$(kfd_user_ids "$pid")
	gpu_dump_ok remap "$WORK/img-remap" "$pid"
	check "remap: the child is gone too" gpu_gone "$child"
	gpu_restore_on_machine remap "$WORK/img-remap" "$pid" "$ids" "$DESC" share
	check "remap: the child has the user gpu_ids it had" eval '[ "$(kfd_user_ids "$child")" = "$ids" ]'
	gpu_finish remap "$pid" "$child"
	gpu_cg_remove share
	check "kfdsim loaded again as the boot loaded it" kfdsim_reload
else
	fail "remap: workload ready"
fi

# --- refuse: the policy that refuses any shared BO ---
if GPU_WL=$SHARE_WL gpu_start refuse; then
	pid=$WL_PID
	child=$(gpu_child_pid)
	AMDGPU_CRIU_SHARED_BO=refuse share_refused refuse "$pid" "$child"
	gpu_finish refuse "$pid" "$child"
else
	fail "refuse: workload ready"
fi

# --- two-gpus: one process, its own BO imported on a second GPU ---
if GPU_WL=$SHARE_WL gpu_start two-gpus --same-process; then
	pid=$WL_PID
	EXPECT=ok gpu_dump_restore two-gpus "$WORK/img-two" "$pid"
	check "two-gpus: the dump names the second GPU's GTT BO an import of the VRAM BO" \
		grep -qE "amdgpu_plugin: pid $pid's BO .* KiB of VRAM, GPU ([0-9]+)\) and pid $pid's BO .* KiB of GTT, GPU [0-9]+\) $ONE_BUFFER: restored as an import" "$WORK/img-two/dump.log"
	gpu_finish two-gpus "$pid"
else
	fail "two-gpus: workload ready"
fi

# --- policy: an unknown value fails the dump before anything is paused ---
if GPU_WL=$SHARE_WL gpu_start policy; then
	pid=$WL_PID
	child=$(gpu_child_pid)
	AMDGPU_CRIU_SHARED_BO=bogus criu_dump "$WORK/img-policy" "$pid"
	rc=$?
	check "policy: dump fails (status $rc)" test "$rc" -ne 0
	check "policy: the plugin says the value is unknown" \
		grep -q "amdgpu_plugin: Error: AMDGPU_CRIU_SHARED_BO=bogus: unknown sharing policy; use share (the default), refuse or copy" "$WORK/img-policy/dump.log"
	gpu_finish policy "$pid" "$child"
else
	fail "policy: workload ready"
fi

# --- options file: what the environment does not say (podman drops it) ---
if GPU_WL=$SHARE_WL gpu_start options-file; then
	pid=$WL_PID
	child=$(gpu_child_pid)
	printf '# this node\nAMDGPU_CRIU_SHARED_BO = refuse\n' >"$WORK/amdgpu.conf"
	AMDGPU_CRIU_CONFIG=$WORK/amdgpu.conf share_refused options-file "$pid" "$child"
	check "options-file: the plugin read it" \
		grep -q "amdgpu_plugin: options file $WORK/amdgpu.conf: 1 option set" "$WORK/img-options-file/dump.log"
	# a bad file fails the dump at init, naming the file and line
	printf 'AMDGPU_CRIU_SHARED_BO=refuse\nAMDGPU_CRIU_SHARE=1\n' >"$WORK/bad.conf"
	AMDGPU_CRIU_CONFIG=$WORK/bad.conf criu_dump "$WORK/img-bad-conf" "$pid"
	rc=$?
	check "options-file: a bad one fails the dump (status $rc)" test "$rc" -ne 0
	check "options-file: ... naming the file, line and option" \
		grep -q "amdgpu_plugin: Error: options file $WORK/bad.conf line 2: AMDGPU_CRIU_SHARE is no option of the plugin" "$WORK/img-bad-conf/dump.log"
	gpu_finish options-file "$pid" "$child"
else
	fail "options-file: workload ready"
fi

# --- control: private copies accepted, and the sharing is lost ---
if GPU_WL=$SHARE_WL gpu_start copy; then
	pid=$WL_PID
	child=$(gpu_child_pid)
	export AMDGPU_CRIU_SHARED_BO=copy
	EXPECT=ok gpu_dump_restore copy "$WORK/img-copy" "$pid"
	unset AMDGPU_CRIU_SHARED_BO
	check "copy: the dump warned that the BOs become private copies" \
		grep -qE "amdgpu_plugin: Warn: pid $pid's BO .* and pid $child's BO .* $ONE_BUFFER: restored as private copies" "$WORK/img-copy/dump.log"
	gpu_trigger
	gpu_result "$pid"
	check "copy: the restored processes no longer share the buffer (FAIL the exporter does not see the importer's write)" \
		eval 'echo "$RESULT" | grep -q "^FAIL the exporter does not see the importer.s write"'
	check "copy: the workload ended" gpu_gone "$pid" "$child"
	check "copy: no workload, criu or KFD process left" gpu_no_strays
	gpu_drop_images
else
	fail "copy: workload ready"
fi
tap_done
