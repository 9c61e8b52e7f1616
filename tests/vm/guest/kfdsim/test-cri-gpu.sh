#!/bin/sh
# A GPU container of a Kubernetes pod checkpointed and restored through the
# CRI of Debian testing's containerd 2.1 (over trixie's runc), with the
# kubelet's calls (guest/cri.sh, guest/cri/cri.py) and the plugin installed
# from `make deb`'s package. kfdsim is reloaded as the MI210 machine (8 GPUs,
# two xGMI hives of 4) and `amdgpu-criu cdi` writes the CDI spec of its GPUs.
#   pod A (host network) gets A0 A1 (hive A) as CDI devices: RunPodSandbox,
#     PullImage, CreateContainer, StartContainer; the workload runs on both;
#   CheckpointContainer writes the checkpoint archive (the container keeps
#     running, as KEP-2008 has it); pod A is stopped and removed;
#   the archive becomes a checkpoint image (its index annotated
#     org.criu.checkpoint.container.name, what containerd looks for), pulled
#     with PullImage; pod B gets B0 B1 (hive B: other gpu_ids, render minors,
#     hive); CreateContainer from the checkpoint image and StartContainer
#     restore it onto them: the workload's self-check PASSes with its
#     user gpu_ids remapped onto B's;
#   pod C gets B0 only: the restore is refused, the plugin's one-line reason
#     in CRIU's log, nothing left running;
#   pod D gets B2 B3 and the same checkpoint image: a second restore, checked.
# runc runs CRIU in the restored container's cgroup with its device rules in
# place (the new pod's CDI devices), so the plugin sees the pod's GPUs only:
# no option names them.
# vm-boot: cri
# vm-timeout: 900
. /test/lib/guest.sh
. /test/lib/ct.sh
. /test/lib/cri.sh
ct_missing runc && { tap_done; exit; }
ct_missing /usr/bin/containerd && { tap_done; exit; }
ct_missing python3 && { tap_done; exit; }
kfdsim_debugfs || diag "no kfdsim debugfs"
NAME=gpu
R=$CT/out/$NAME
CRIU_CONF=/etc/criu/default.conf

# secs_since T0: seconds since uptime T0, one decimal
secs_since() { awk -v a="$1" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }'; }
now() { cut -d' ' -f1 /proc/uptime; }

finish() {
	cri_cleanup
	rm -f "$CRIU_CONF" /etc/cdi/amdgpu.json
	check "kfdsim loaded again as the boot loaded it" kfdsim_reload
	tap_done
	exit
}

# restore_into POD IMAGE MINOR...: a new pod given these GPUs, the
# container created from checkpoint IMAGE and started; POD_ID, CTR_ID; the
# status of StartContainer (CreateContainer's failure: 2)
restore_into() {
	local pod=$1 image=$2 rc
	shift 2
	POD_ID= CTR_ID=
	cp "$CT/$NAME.out.ckpt" "$R.out" && rm -f "$R.trigger" "$R.result" "$R.trigger.tmp"
	cri "runp-$pod" runp "$pod" || return 2
	POD_ID=$CRI_OUT
	# shellcheck disable=SC2046
	cri "create-$pod" create "$POD_ID" "$pod" "$image" "$NAME" $(cri_cdi "$@") $CRI_MOUNTS || return 2
	CTR_ID=$CRI_OUT
	T0=$(now)
	cri "start-$pod" start "$CTR_ID"
	rc=$?
	diag "$pod: StartContainer (the restore): $(secs_since "$T0") s"
	cri_restore_log
	return "$rc"
}

# restored_case POD WHAT "MINOR MINOR" IDS: the restored pod's checks, the
# workload's self-check with its ids mapped onto IDS, the pod removed
restored_case() {
	local pod=$1 what=$2 minors=$3 to_ids=$4 map
	ct_plugin_says "$CT/restore.log"
	check "$pod: CRI says the restored container is RUNNING" eval '[ "$(cri_state "$CTR_ID")" = RUNNING ]'
	WL_PID=$(cri_pid "$CTR_ID")
	img=$CT
	ct_restored_checks "$pod" "$minors" "$ids"
	map=$(echo "$ids" | awk -v b="$to_ids" '{ split(b, B, " "); for (i = 1; i <= NF; i++) print "map", $i, B[i] }')
	gpu_trigger "$map"
	gpu_result "$WL_PID"
	check "$pod: self-check PASS on $what (every byte, ids, doorbells, fds)" gpu_passed
	check "$pod: StopContainer, RemoveContainer" eval 'cri "stop-$pod" stop "$CTR_ID" && cri "rm-$pod" rm "$CTR_ID"'
	check "$pod: StopPodSandbox, RemovePodSandbox" cri_pod_gone "$POD_ID"
	check "$pod: nothing left (no pod, container, shim, workload, criu or KFD process)" wait_until 20 cri_nothing_left
}

# restore_failed POD: after a failed restore, its last lines and the pod removed
restore_failed() {
	grep -a 'Error' "$CT/restore.log" 2>/dev/null | tail -n 5 | sed "s/^/# $1 restore.log: /"
	[ -z "${CTR_ID:-}" ] || python3 "$CRI_PY" rm "$CTR_ID" >/dev/null 2>&1
	[ -z "${POD_ID:-}" ] || cri_pod_gone "$POD_ID"
}

ct_setup
mkdir -p "$CT"
check "kfdsim reloaded as MI210 (two hives)" eval 'kfdsim_unload && kfdsim_load machine=/test/kfdsim/machines/mi210.desc'
kfd_gpu_table >"$WORK/gpus"
hive_a=$(awk 'NR == 1 { print $4 }' "$WORK/gpus")
awk -v h="$hive_a" '$4 == h' "$WORK/gpus" >"$WORK/a"
awk -v h="$hive_a" '$4 != h' "$WORK/gpus" >"$WORK/b"
a0=$(sed -n 1p "$WORK/a" | col 3) a1=$(sed -n 2p "$WORK/a" | col 3)
b0=$(sed -n 1p "$WORK/b" | col 3) b1=$(sed -n 2p "$WORK/b" | col 3)
b2=$(sed -n 3p "$WORK/b" | col 3) b3=$(sed -n 4p "$WORK/b" | col 3)
a_ids=$(head -2 "$WORK/a" | col 2) b_ids=$(head -2 "$WORK/b" | col 2) b23_ids=$(sed -n 3,4p "$WORK/b" | col 2)
diag "A: renderD$a0 renderD$a1 ($a_ids); B: renderD$b0 renderD$b1 ($b_ids), renderD$b2 renderD$b3 ($b23_ids)"
check "amdgpu-criu cdi: the CDI spec names the machine's 8 GPUs" eval 'cri_cdi_spec && [ "$(wc -l <"$CT/cdi-names")" = 8 ]'
diag "CDI: $(tr '\n' ' ' <"$CT/cdi-names")"
# host-network pods: CRIU's network lock would want iptables, and there is
# no network namespace of the pod's to lock
mkdir -p /etc/criu && printf '# test-cri-gpu: pods on the node network, no iptables in the VM\nnetwork-lock skip\n' >"$CRIU_CONF"
check "containerd serves CRI" cri_containerd_start || finish
diag "CRI: $CRI_OUT"
check "the registry on $REG serves the pause and workload images" cri_registry_start || finish
check "PullImage $REG/pause:1 (the sandbox image)" cri pull-pause pull "$REG/pause:1" || finish
check "PullImage $CRI_GPU_IMAGE" cri pull-gpu pull "$CRI_GPU_IMAGE" || finish

# pod A: the GPU container on A0 A1
rm -f "$R".*
check "pod-a: RunPodSandbox (host network)" cri runp-a runp pod-a || finish
POD_A=$CRI_OUT
# shellcheck disable=SC2046,SC2086
check "pod-a: CreateContainer with CDI devices for renderD$a0, renderD$a1" \
	cri create-a create "$POD_A" pod-a "$CRI_GPU_IMAGE" "$NAME" $(cri_cdi "$a0" "$a1") $CRI_MOUNTS -- \
	/bin/sh -c "exec /test/bin/zdtm-gpu-basic --render-fds /out/$NAME.ready /out/$NAME.trigger /out/$NAME.result </dev/null >/out/$NAME.out 2>&1" || finish
CTR_A=$CRI_OUT
check "pod-a: StartContainer" cri start-a start "$CTR_A" || finish
if ! check "pod-a: the workload is READY" wait_until 120 test -f "$R.ready"; then
	diag "not ready: $(tail -3 "$R.out" 2>/dev/null | tr '\n' ';')"
	keep "$CT/containerd.log"
	finish
fi
WL_PID=$(cri_pid "$CTR_A")
check "pod-a: the workload sees exactly the pod's GPUs ($a_ids)" \
	eval '[ "$(sed -n "s/^visible //p" "$R.ready")" = "$a_ids" ]'
ids=$(kfd_user_ids "$WL_PID")

T0=$(now)
cri checkpoint-a --timeout 300 checkpoint "$CTR_A" "$CT/ckpt.tar"
rc=$?
diag "CheckpointContainer: $(secs_since "$T0") s"
cp "$R.out" "$CT/$NAME.out.ckpt"
if ! check "pod-a: CheckpointContainer (status $rc)" test "$rc" -eq 0; then
	keep "$CT/containerd.log"
	finish
fi
/usr/bin/tar -tf "$CT/ckpt.tar" >"$CT/ckpt.list" 2>&1
diag "archive: $(wc -c <"$CT/ckpt.tar") bytes: $(grep -v '^checkpoint/.' "$CT/ckpt.list" | tr '\n' ' ')"
check "the archive holds the plugin's images in checkpoint/ ($(grep -E '^(\./)?checkpoint/amdgpu-' "$CT/ckpt.list" | sed 's|.*/||' | tr '\n' ' '))" \
	grep -qE '^(\./)?checkpoint/amdgpu-' "$CT/ckpt.list"
check "the archive holds config.dump, spec.dump, status.dump, dump.log" eval '
	for f in config.dump spec.dump status.dump dump.log; do grep -qE "^(\./)?$f\$" "$CT/ckpt.list" || exit 1; done'
/usr/bin/tar -xOf "$CT/ckpt.tar" dump.log >"$CT/dump.log" 2>/dev/null || /usr/bin/tar -xOf "$CT/ckpt.tar" ./dump.log >"$CT/dump.log" 2>/dev/null
ct_plugin_says "$CT/dump.log"
check "pod-a: the container still runs after the checkpoint (KEP-2008 leaves it running)" \
	eval '[ "$(cri_state "$CTR_A")" = RUNNING ] && alive "$WL_PID"'
check "pod-a: StopContainer, RemoveContainer, StopPodSandbox, RemovePodSandbox" \
	eval 'cri stop-a stop "$CTR_A" && cri rm-a rm "$CTR_A" && cri_pod_gone "$POD_A"'
check "pod-a: nothing left" wait_until 20 cri_nothing_left

# the checkpoint image, as checkpointctl builds one, pulled as the kubelet would
check "the checkpoint archive as an OCI checkpoint image" \
	eval 'python3 "$OCI_PY" checkpoint "$CT/oci/gpu-ckpt" "$CT/ckpt.tar" 1 "$NAME" pod-a >"$CT/oci-ckpt.log" 2>&1'
check "PullImage $REG/gpu-ckpt:1" cri pull-ckpt pull "$REG/gpu-ckpt:1"

# pod C: one GPU; refused
restore_into pod-c "$REG/gpu-ckpt:1" "$b0"
rc=$?
check "pod-c: the restore into a pod given one GPU (renderD$b0) refused (status $rc)" test "$rc" -eq 1
diag "the CRI caller's error: $CRI_ERR"
ct_plugin_says "$CT/restore.log"
check "pod-c: the plugin says why in one line (CRIU's log)" \
	grep -qE "amdgpu_plugin: (Error: )?.*(cannot be restored on this node|checkpointed with 2 GPUs)" "$CT/restore.log"
check "pod-c: no workload, criu or KFD process left" gpu_no_strays
check "pod-c: its container is not running" eval '[ "$(cri_state "$CTR_ID")" != RUNNING ]'
check "pod-c: RemoveContainer, StopPodSandbox, RemovePodSandbox" \
	eval 'cri rm-c rm "$CTR_ID" && cri_pod_gone "$POD_ID"'
check "pod-c: nothing left" wait_until 20 cri_nothing_left

# pod B: the other hive
restore_into pod-b "$REG/gpu-ckpt:1" "$b0" "$b1"
rc=$?
if check "pod-b: CreateContainer from the checkpoint image, StartContainer: restored onto B (status $rc)" test "$rc" -eq 0; then
	restored_case pod-b "B0 B1 (the other hive)" "$b0 $b1" "$b_ids"
else
	keep "$CT/containerd.log" "$CT/restore.log"
	restore_failed pod-b
fi

# pod D: the same checkpoint image once more, onto B2 B3
restore_into pod-d "$REG/gpu-ckpt:1" "$b2" "$b3"
rc=$?
if check "pod-d: a second restore of the same checkpoint image, onto B2 B3 (status $rc)" test "$rc" -eq 0; then
	restored_case pod-d "B2 B3" "$b2 $b3" "$b23_ids"
else
	keep "$CT/containerd.log" "$CT/restore.log"
	restore_failed pod-d
fi
check "RemoveImage of the checkpoint image and the workload image" \
	eval 'cri rmi-ckpt rmi "$REG/gpu-ckpt:1" && cri rmi-gpu rmi "$CRI_GPU_IMAGE"'
diag "guest memory: $(awk '/^(MemTotal|MemAvailable|Shmem):/ { printf "%s %d MiB ", $1, $2 / 1024 }' /proc/meminfo)"
finish
