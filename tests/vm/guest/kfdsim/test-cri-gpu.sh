#!/bin/sh
# A GPU container of a Kubernetes pod checkpointed and restored through the
# CRI of Debian testing's containerd 2.1 (over Debian testing's runc 1.3), with the
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
#   pod D gets B2 B3 and the same checkpoint image: a second restore, checked;
#   pod E gets B0 B1 under trixie's runc 1.1.15 (the runtime handler
#     "runc-1.1"): refused, the plugin saying it sees 8 GPUs.
# runc 1.3 gives CRIU the new container's cgroup as its cgroup root, so the
# restored task lands in that cgroup with its device filter (the new pod's
# CDI devices) and the plugin sees the pod's GPUs only: no option names
# them. runc 1.1 on cgroup v2 gives CRIU no cgroup root: CRIU puts the task
# into a copy of the checkpointed container's cgroup path, which has no
# device filter, so the plugin sees every GPU and refuses (the safe outcome).
# vm-boot: cri
# vm-timeout: 1200
. /test/lib/guest.sh
. /test/lib/ct.sh
. /test/lib/cri.sh
cri_missing && { tap_done; exit; }
kfdsim_debugfs || diag "no kfdsim debugfs"
NAME=gpu
CKPT=$REG/gpu-ckpt:1

finish() {
	cri_teardown
	check "kfdsim loaded again as the boot loaded it" kfdsim_reload
	tap_done
	exit
}

cri_setup test-cri-gpu || finish
cri_pod_a "$NAME" || finish
cri_checkpoint_a "$NAME" "$CT/ckpt.tar" || finish
cri_pod_a_gone
cri_ckpt_image gpu-ckpt 1 "$NAME" "$CT/ckpt.tar"

# pod C: one GPU; refused
cri_restore_into pod-c "$CKPT" "$NAME" "$b0"
rc=$?
check "pod-c: the restore into a pod given one GPU (renderD$b0) refused (status $rc)" test "$rc" -eq 1
diag "the CRI caller's error: $CRI_ERR"
ct_plugin_says "$CT/restore.log"
check "pod-c: the plugin says why in one line (CRIU's log)" \
	grep -qE "amdgpu_plugin: (Error: )?.*(cannot be restored on this node|checkpointed with 2 GPUs)" "$CT/restore.log"
check "pod-c: no workload, criu or KFD process left" gpu_no_strays
check "pod-c: its container is not running" eval '[ "$(cri_state "$CTR_ID")" != RUNNING ]'
check "pod-c: RemoveContainer, StopPodSandbox, RemovePodSandbox (tried again as a kubelet does): CRI lists nothing" \
	cri_kubelet_gc "$POD_ID" "$CTR_ID"
check "pod-c: nothing left (no workload, criu or KFD process)" cri_wait_until 60 gpu_no_strays
cri_shim_report pod-c

# pod B: the other hive
cri_restore_into pod-b "$CKPT" "$NAME" "$b0" "$b1"
rc=$?
if must "pod-b: CreateContainer from the checkpoint image, StartContainer: restored onto hive B (status $rc)" test "$rc" -eq 0; then
	cri_restored pod-b "B0 B1 (the other hive)" "$b0 $b1" "$b_ids"
else
	cri_restore_failed pod-b
fi

# pod D: the same checkpoint image once more, onto B2 B3
cri_restore_into pod-d "$CKPT" "$NAME" "$b2" "$b3"
rc=$?
if must "pod-d: a second restore of the same checkpoint image, onto B2 B3 (status $rc)" test "$rc" -eq 0; then
	cri_restored pod-d "B2 B3" "$b2 $b3" "$b23_ids"
else
	cri_restore_failed pod-d
fi
# pod E: B0 B1 under trixie's runc 1.1.15: the task escapes the device filter; refused
CRI_HANDLER=runc-1.1 cri_restore_into pod-e "$CKPT" "$NAME" "$b0" "$b1"
rc=$?
check "pod-e: under runc 1.1.15 the restore onto B0 B1 refused (status $rc): the plugin sees every GPU" test "$rc" -eq 1
ct_plugin_says "$CT/restore.log"
check "pod-e: the plugin says why in one line (checkpointed with 2 GPUs, the task can use 8)" \
	grep -qE "amdgpu_plugin: (Error: )?.*checkpointed with 2 GPUs but its restored task can use 8" "$CT/restore.log"
check "pod-e: its hint names the likely cause (runc < 1.2 on cgroup v2 gives CRIU no cgroup root)" \
	grep -qF "no cgroup root (runc < 1.2 on cgroup v2)" "$CT/restore.log"
check "pod-e: no workload, criu or KFD process left" gpu_no_strays
check "pod-e: RemoveContainer, StopPodSandbox, RemovePodSandbox (tried again as a kubelet does): CRI lists nothing" \
	cri_kubelet_gc "$POD_ID" "$CTR_ID"
check "pod-e: nothing left (no workload, criu or KFD process)" cri_wait_until 60 gpu_no_strays
cri_shim_report pod-e

check "RemoveImage of the checkpoint image and the workload image" \
	eval 'cri rmi-ckpt rmi "$CKPT" && cri rmi-gpu rmi "$CRI_GPU_IMAGE"'
diag "guest memory: $(awk '/^(MemTotal|MemAvailable|Shmem):/ { printf "%s %d MiB ", $1, $2 / 1024 }' /proc/meminfo)"
finish
