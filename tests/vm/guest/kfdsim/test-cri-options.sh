#!/bin/sh
# The CRI path of containerd 2.1 (guest/cri.sh) beyond the main flow of
# test-cri-gpu: how options reach the plugin, cancelled restores, and the
# time CRI adds to CRIU's.
#   pod A (A0 A1) is checkpointed once by runc directly (`runc-1.3 checkpoint
#     --leave-running`, containerd's runc root) and once by
#     CheckpointContainer: the plugin's images are in both;
#   runc directly: pod A's container is stopped (its pod kept) and the
#     direct checkpoint restored by `runc-1.3 restore` into a copy of its
#     OCI spec (the workload image's rootfs, a cgroup of its own): the
#     restored workload's self-check PASSes on A0 A1, then nothing of it
#     is left; pod A is removed;
#   options: the CRI request's environment is the container's, never CRIU's;
#     the plugin reads the restoring node's options file
#     (/etc/criu/amdgpu_plugin.conf): pod B restored with
#     AMDGPU_CRIU_GPUS naming B0 B1 by PCI address there (CRIU's log says
#     it read the file) PASSes its self-check;
#   times: one line gives checkpoint and restore of the same container
#     through runc directly and through CRI, each with CRIU's own share
#     (reported, never asserted);
#   cancelled: StartContainer of a restore whose caller gives up after 1 s
#     (gRPC deadline), and a restore whose pod is stopped and removed while
#     CRIU restores it; each time a kubelet's clean-up (StopContainer,
#     RemoveContainer, StopPodSandbox, RemovePodSandbox, tried again)
#     leaves CRI listing nothing, and nothing of ours is left (no workload,
#     criu or KFD process, no open file of kfdsim, no new file on the node);
#     what containerd and runc leave (a shim that outlives the pod, runc's
#     state directory) is reported as diag. The checkpoint image restores
#     after that.
# vm-boot: cri
# vm-timeout: 1200
. /test/lib/guest.sh
. /test/lib/ct.sh
. /test/lib/cri.sh
cri_missing && { tap_done; exit; }
kfdsim_debugfs || diag "no kfdsim debugfs"
NAME=gpu2
CKPT=$REG/gpu-ckpt2:1
OPTS=/etc/criu/amdgpu_plugin.conf
RUNC_ROOT=/run/containerd/runc/k8s.io

finish() {
	rm -f "$OPTS"
	cri_teardown
	check "kfdsim loaded again as the boot loaded it" kfdsim_reload
	tap_done
	exit
}

# crius_secs LOG: CRIU's own time, the last timestamp of its log
criu_secs() { sed -n 's/^(\([ 0-9.]*\)).*/\1/p' "$1" | tail -1 | tr -d ' '; }

# cancelled WHAT POD_ID CTR_ID: after a cancelled restore: a kubelet's
# clean-up of the pod and container, then nothing of ours left (workload,
# criu and KFD processes, files: $CT/files.before), as TAP; what containerd
# and runc leave (a shim, runc's state) as diag
cancelled() {
	check "$1: a kubelet's clean-up (StopContainer, RemoveContainer, StopPodSandbox, RemovePodSandbox, tried again): CRI lists no pod or container" \
		cri_kubelet_gc "$2" "$3"
	grep '^cri: ' "$CT/gc.log" | sort | uniq -c | head -n 4 | sed "s/^ */# $1: clean-up: /"
	check "$1: no workload, criu or KFD process left" cri_wait_until 60 gpu_no_strays
	cri_shim_report "$1"
	check "$1: no file of the plugin or CRIU left (the node's /dev/shm, /dev/dri, /tmp, /run, /etc/criu)" \
		cri_wait_until 30 cri_files_left "$CT/files.before"
	cri_state_left "$1" "$2" "$3"
	check "$1: no file of kfdsim open anywhere" kfdsim_idle
}

# direct_bundle: $CT/direct/bundle/config.json, pod A's container's OCI
# spec as containerd gave it to runc (its mounts, namespaces, devices and
# device rules), with the workload image's rootfs ($CT/rootfs, what the
# image was built from) as its root and a cgroup of its own
direct_bundle() {
	local b=/run/containerd/io.containerd.runtime.v2.task/k8s.io/$CTR_A
	mkdir -p "$CT/direct/bundle" && python3 -c '
import json, sys
c = json.load(open(sys.argv[1] + "/config.json"))
c["root"] = {"path": sys.argv[3], "readonly": c["root"].get("readonly", False)}
c["linux"]["cgroupsPath"] += "-direct"
json.dump(c, open(sys.argv[2] + "/config.json", "w"))
' "$b" "$CT/direct/bundle" "$CT/rootfs"
}

# direct_restore: the direct checkpoint restored by `runc-1.3 restore` into
# direct_bundle's container, once pod A's container is stopped (its pod,
# whose namespaces and files the spec names, kept): the same container that
# StartContainer restores from the checkpoint image, through runc alone;
# the restored workload's checks and self-check, then it is killed and
# deleted, nothing of it left; as TAP; DIRECT_RESTORE_SECS,
# DIRECT_RESTORE_CRIU
direct_restore() {
	local pid rc t0
	rm -rf "$CT/direct/rwork" && mkdir -p "$CT/direct/rwork"
	cp "$CT/$NAME.out.direct" "$R.out" && rm -f "$R.trigger" "$R.result" "$R.trigger.tmp"
	t0=$(now)
	(cd "$CT/direct/bundle" && timeout -s KILL 300 runc-1.3 restore -d -b "$CT/direct/bundle" \
		--image-path "$CT/direct/img" --work-path "$CT/direct/rwork" direct-r </dev/null >"$CT/direct/restore.out" 2>&1)
	rc=$?
	DIRECT_RESTORE_SECS=$(secs_since "$t0")
	DIRECT_RESTORE_CRIU=$(criu_secs "$CT/direct/rwork/restore.log")
	diag "runc restore, directly: $DIRECT_RESTORE_SECS s"
	pid=$(ct_pid runc-1.3 direct-r)
	if must "runc-1.3 restore of the direct checkpoint into a copy of pod A's container, pod A's stopped (status $rc)" \
		eval '[ "$rc" -eq 0 ] && [ -n "$pid" ] && alive "$pid"'; then
		WL_PID=$pid
		ct_plugin_says "$CT/direct/rwork/restore.log"
		ct_restored_checks "runc directly" "$a0 $a1" "$ids"
		gpu_trigger
		gpu_result "$WL_PID"
		check "runc directly: self-check PASS on A0 A1 (every byte, ids, doorbells, fds)" gpu_passed
	else
		DIRECT_RESTORE_SECS="$DIRECT_RESTORE_SECS (failed, status $rc)"
		tail -3 "$CT/direct/restore.out" | sed 's/^/# runc directly: /'
		grep -a 'Error' "$CT/direct/rwork/restore.log" 2>/dev/null | tail -n 5 | sed 's/^/# runc directly: restore.log: /'
		cp "$CT/direct/bundle/config.json" "$CT/direct/rwork/"
		keep "$CT/direct/rwork"
	fi
	ct_delete runc-1.3 direct-r
	check "runc directly: the restored container killed and deleted, no workload, criu or KFD process left" \
		eval '! runc-1.3 state direct-r >/dev/null 2>&1 && cri_wait_until 30 gpu_no_strays'
}

cri_setup test-cri-options || finish
cri_pod_a "$NAME" || finish

# runc directly, then CRI
rm -rf "$CT/direct" && mkdir -p "$CT/direct/img" "$CT/direct/work"
T0=$(now)
timeout -s KILL 300 runc-1.3 --root "$RUNC_ROOT" checkpoint --leave-running --image-path "$CT/direct/img" \
	--work-path "$CT/direct/work" "$CTR_A" </dev/null >"$CT/direct/runc.log" 2>&1
rc=$?
DIRECT_SECS=$(secs_since "$T0")
check "runc checkpoint --leave-running of pod A's container, directly (status $rc)" test "$rc" -eq 0
check "runc directly: the plugin's images are in its image directory" eval 'ls "$CT/direct/img" | grep -q "^amdgpu-"'
DIRECT_CRIU=$(criu_secs "$CT/direct/work/dump.log")
cp "$R.out" "$CT/$NAME.out.direct"
cri_checkpoint_a "$NAME" "$CT/ckpt2.tar" || finish
CKPT_CRIU=$(criu_secs "$CT/dump.log")
check "runc directly: a copy of pod A's container's OCI spec" direct_bundle
check "pod-a: StopContainer (the original stopped, its pod kept)" \
	eval 'cri stop-a0 stop "$CTR_A" && cri_wait_until 60 gpu_no_strays'
direct_restore
cri_pod_a_gone
cri_ckpt_image gpu-ckpt2 1 "$NAME" "$CT/ckpt2.tar"

# the options file of the restoring node names B0 B1 by PCI address (what
# a device plugin or DRA driver knows of a GPU)
B_PCI="$(pci_of "$b0"),$(pci_of "$b1")"
diag "pod-b: B0 B1 are $B_PCI"
printf '# test-cri-options\nAMDGPU_CRIU_GPUS=%s\n' "$B_PCI" >"$OPTS"
cri_restore_into pod-b "$CKPT" "$NAME" "$b0" "$b1"
rc=$?
rm -f "$OPTS"
# the same container through runc directly and through CRI, side by side
diag "time: the same container, checkpoint: runc directly ${DIRECT_SECS} s (CRIU ${DIRECT_CRIU:-?} s), CRI CheckpointContainer ${CKPT_SECS} s (CRIU ${CKPT_CRIU:-?} s); restore: runc directly ${DIRECT_RESTORE_SECS:-?} s (CRIU ${DIRECT_RESTORE_CRIU:-?} s), CRI StartContainer ${RESTORE_SECS} s (CRIU $(criu_secs "$CT/restore.log") s)"
if must "pod-b: restored with the options file naming B0 B1 (status $rc)" test "$rc" -eq 0; then
	check "pod-b: the plugin read the restoring node's options file (CRIU's log)" \
		grep -q "options file $OPTS: 1 option set" "$CT/restore.log"
	cri_restored pod-b "B0 B1, named by PCI address in the options file" "$b0 $b1" "$b_ids"
else
	cri_restore_failed pod-b
fi

# cancelled by the caller's deadline (1 s: a restore through containerd
# takes longer; if it did not, the deadline had nothing to cancel)
cri_files_snap "$CT/files.before"
CRI_TIMEOUT=1
cri_restore_into pod-e "$CKPT" "$NAME" "$b0" "$b1"
rc=$?
CRI_TIMEOUT=
if [ "$rc" -eq 0 ]; then
	ok "pod-e: StartContainer with a 1 s deadline # SKIP the restore finished within it"
else
	check "pod-e: StartContainer with a 1 s deadline: the caller's call ends DEADLINE_EXCEEDED (status $rc)" \
		eval 'echo "$CRI_ERR" | grep -q DEADLINE_EXCEEDED'
fi
diag "pod-e: after the deadline: container $(cri_state "$CTR_ID"), criu: $(pidof criu || echo none)"
cancelled "pod-e (deadline)" "$POD_ID" "$CTR_ID"

# cancelled by removing the pod while CRIU restores it
cp "$CT/$NAME.out.ckpt" "$R.out" && rm -f "$R.trigger" "$R.result"
cri_files_snap "$CT/files.before"
POD_ID= CTR_ID=
if cri runp-f runp pod-f; then
	POD_ID=$CRI_OUT
	# shellcheck disable=SC2046,SC2086
	cri create-f create "$POD_ID" pod-f "$CKPT" "$NAME" $(cri_cdi "$b0" "$b1") $CRI_MOUNTS -- \
		/bin/sh -c "$(cri_wl_cmd "$NAME")" && CTR_ID=$CRI_OUT
fi
if must "pod-f: the restore's container created" test -n "$CTR_ID"; then
	python3 "$CRI_PY" start "$CTR_ID" >"$CT/cri-start-f.log" 2>&1 &
	START_PID=$!
	if wait_until 120 eval 'pidof criu >/dev/null || ! alive "$START_PID"' && pidof criu >/dev/null; then
		# containerd may refuse while the container is starting: the
		# kubelet's clean-up below tries again
		python3 "$CRI_PY" stopp "$POD_ID" >"$CT/cri-stopp-f.log" 2>&1 &&
			python3 "$CRI_PY" rmp "$POD_ID" >>"$CT/cri-stopp-f.log" 2>&1
		diag "pod-f: StopPodSandbox, RemovePodSandbox while CRIU restores its container: status $? $(tr '\n' ' ' <"$CT/cri-stopp-f.log")"
	else
		ok "pod-f: the pod removed while CRIU restores # SKIP StartContainer ended before CRIU was seen"
	fi
	# StartContainer's own deadline is cri.py's 300 s
	wait "$START_PID"
	diag "pod-f: StartContainer: status $?: $(tr '\n' ' ' <"$CT/cri-start-f.log")"
fi
cancelled "pod-f (pod removed)" "$POD_ID" "$CTR_ID"

# still restorable
cri_restore_into pod-g "$CKPT" "$NAME" "$b2" "$b3"
rc=$?
if must "pod-g: the checkpoint image restores after the cancelled ones (status $rc)" test "$rc" -eq 0; then
	cri_restored pod-g "B2 B3" "$b2 $b3" "$b23_ids"
else
	cri_restore_failed pod-g
fi
finish
