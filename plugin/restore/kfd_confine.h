/* SPDX-License-Identifier: MIT */
/*
 * /dev/kfd opened by a restored task for the GPUs it is restored onto only.
 *
 * KFD gives a process device data (a pdd) for every GPU its device cgroup
 * allows, once, when the process first opens /dev/kfd, and its CRIU RESTORE
 * wants exactly as many as were checkpointed. A runtime that installs the
 * container's device filter only after the restore (crun with the cgroupfs
 * manager) leaves the restored task allowed every GPU of the node: its KFD
 * process would get them all and RESTORE would refuse. So the task opens
 * /dev/kfd from a child cgroup of its own whose device program (cgroup v2,
 * BPF_CGROUP_DEVICE, added to whatever its ancestors run) allows of the
 * DRM render nodes only the targets', then moves back and removes the
 * child. The cgroup2 hierarchy is reached through a detached mount
 * (fsopen/fsmount), so nothing appears in the container's mount table.
 */
#ifndef AMDGPU_CRIU_KFD_CONFINE_H
#define AMDGPU_CRIU_KFD_CONFINE_H

#include <stddef.h>
#include <stdint.h>

#define KFD_CONFINE_MAX 128

/*
 * fd of /dev/kfd (O_RDWR) opened while only these render minors are
 * allowed, or -errno with one line in why (the task's cgroup is as before).
 */
int kfd_open_confined(const uint32_t *render_minors, size_t n, char *why, size_t whylen);

/* The device program's instructions for these minors (tests): count, or -E2BIG. */
struct bpf_insn;
int kfd_confine_program(const uint32_t *render_minors, size_t n, struct bpf_insn *insns,
			size_t max);

#endif
