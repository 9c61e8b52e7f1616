// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/mount.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "plugin/restore/kfd_confine.h"
#include "plugin/kfd_dev.h"

#define INSN(c, d, s, o, i)                                                                        \
	((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})

/* A conditional jump at insns[at] to insns[to]. */
static struct bpf_insn jump_to(uint8_t op, uint8_t reg, int32_t imm, size_t at, size_t to)
{
	return INSN(BPF_JMP | op | BPF_K, reg, 0, (int16_t)(to - at - 1), imm);
}

int kfd_confine_program(const uint32_t *render_minors, size_t n, struct bpf_insn *insns, size_t max)
{
	size_t len = 0, i, allow;

	if (n > KFD_CONFINE_MAX || max < n + 11)
		return -E2BIG;
	allow = n + 9; /* index of the "allow" block */
	/* r2 = device type, r3 = major, r4 = minor (struct bpf_cgroup_dev_ctx) */
	insns[len++] = INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, 0, 0);
	insns[len++] = INSN(BPF_ALU64 | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff);
	insns[len++] = INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_3, BPF_REG_1, 4, 0);
	insns[len++] = INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_4, BPF_REG_1, 8, 0);
	/* anything but a DRM render node is left to the other programs */
	insns[len] = jump_to(BPF_JNE, BPF_REG_2, BPF_DEVCG_DEV_CHAR, len, allow);
	len++;
	insns[len] = jump_to(BPF_JNE, BPF_REG_3, DRM_MAJOR, len, allow);
	len++;
	insns[len] = jump_to(BPF_JLT, BPF_REG_4, DRM_RENDER_BASE, len, allow);
	len++;
	for (i = 0; i < n; i++, len++)
		insns[len] = jump_to(BPF_JEQ, BPF_REG_4, (int32_t)render_minors[i], len, allow);
	insns[len++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0);
	insns[len++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	insns[len++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1); /* allow */
	insns[len++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	return (int)len;
}

static int load_program(const uint32_t *minors, size_t n)
{
	struct bpf_insn insns[KFD_CONFINE_MAX + 11];
	union bpf_attr attr;
	int len = kfd_confine_program(minors, n, insns, sizeof(insns) / sizeof(insns[0]));
	int fd;

	if (len < 0)
		return len;
	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
	attr.insns = (uint64_t)(uintptr_t)insns;
	attr.insn_cnt = (uint32_t)len;
	attr.license = (uint64_t)(uintptr_t) "MIT";
	fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

static int attach_program(int cgroup_fd, int prog_fd)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.target_fd = (uint32_t)cgroup_fd;
	attr.attach_bpf_fd = (uint32_t)prog_fd;
	attr.attach_type = BPF_CGROUP_DEVICE;
	attr.attach_flags = BPF_F_ALLOW_MULTI;
	return syscall(SYS_bpf, BPF_PROG_ATTACH, &attr, sizeof(attr)) ? -errno : 0;
}

/* The cgroup2 hierarchy of this cgroup namespace, as a detached mount. */
static int cgroup2_root(void)
{
	int fs, mnt, ret;

	fs = (int)syscall(SYS_fsopen, "cgroup2", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -errno;
	if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0)) {
		ret = -errno;
		close(fs);
		return ret;
	}
	mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, 0);
	ret = mnt < 0 ? -errno : mnt;
	close(fs);
	return ret;
}

/* This process's cgroup v2 path, relative ("." for the root). */
static int own_cgroup(char *path, size_t len)
{
	char line[4096];
	FILE *f = fopen("/proc/self/cgroup", "re");
	int ret = -EOPNOTSUPP;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		size_t l;

		if (strncmp(line, "0::/", 4))
			continue;
		l = strcspn(line + 4, "\n");
		if (l >= len)
			break;
		if (!l)
			snprintf(path, len, ".");
		else
			snprintf(path, len, "%.*s", (int)l, line + 4);
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

static int join(int cgroup_fd)
{
	int fd = openat(cgroup_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, "0", 1) != 1)
		ret = -errno;
	close(fd);
	return ret;
}

int kfd_open_confined(const uint32_t *render_minors, size_t n, char *why, size_t whylen)
{
	char rel[2048], child[64];
	int root = -1, own = -1, sub = -1, prog = -1, kfd = -1, ret;
	const char *step;
	bool moved = false, made = false;

	step = "read /proc/self/cgroup (cgroup v2)";
	ret = own_cgroup(rel, sizeof(rel));
	if (ret)
		goto out;
	step = "mount cgroup2 (fsopen/fsmount)";
	root = ret = cgroup2_root();
	if (ret < 0)
		goto out;
	step = "open its cgroup";
	own = openat(root, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (own < 0) {
		ret = -errno;
		goto out;
	}
	snprintf(child, sizeof(child), "amdgpu-criu-restore-%d", (int)getpid());
	step = "create a child cgroup";
	if (mkdirat(own, child, 0700)) {
		ret = -errno;
		goto out;
	}
	made = true;
	sub = openat(own, child, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sub < 0) {
		ret = -errno;
		goto out;
	}
	step = "load the device program (bpf)";
	prog = ret = load_program(render_minors, n);
	if (ret < 0)
		goto out;
	step = "attach it";
	ret = attach_program(sub, prog);
	if (ret)
		goto out;
	step = "enter the child cgroup";
	ret = join(sub);
	if (ret)
		goto out;
	moved = true;
	step = "open " KFD_DEVICE_PATH;
	kfd = open(KFD_DEVICE_PATH, O_RDWR);
	ret = kfd < 0 ? -errno : 0;
out:
	if (moved) {
		int back = join(own);

		if (back && !ret) {
			ret = back;
			step = "go back to its own cgroup";
		}
	}
	if (made) /* its program goes with it */
		unlinkat(own, child, AT_REMOVEDIR);
	if (ret && kfd >= 0) {
		close(kfd);
		kfd = -1;
	}
	if (ret)
		snprintf(why, whylen, "cannot %s: %s", step, strerror(-ret));
	if (prog >= 0)
		close(prog);
	if (sub >= 0)
		close(sub);
	if (own >= 0)
		close(own);
	if (root >= 0)
		close(root);
	return ret ? ret : kfd;
}
