// SPDX-License-Identifier: MIT
/*
 * The device program of kfd_open_confined() (plugin/restore/kfd_confine.h): its
 * size for N render minors, the bound, and that the kernel's verifier
 * accepts it (where this process may load BPF programs). What it allows is
 * checked in the VM, where KFD counts the GPUs it gives the process
 * (test-ct-crun).
 */
#include <errno.h>
#include <linux/bpf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugin/restore/kfd_confine.h"

static int verifier_load(const struct bpf_insn *insns, int n)
{
	char log[4096] = "";
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
	attr.insns = (uint64_t)(uintptr_t)insns;
	attr.insn_cnt = (uint32_t)n;
	attr.license = (uint64_t)(uintptr_t) "MIT";
	fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	if (fd < 0) {
		int err = -errno;

		if (err != -EPERM) { /* again, for the verifier's words */
			attr.log_buf = (uint64_t)(uintptr_t)log;
			attr.log_size = sizeof(log);
			attr.log_level = 1;
			syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
			print_message("verifier: %s\n", log);
		}
		return err;
	}
	close(fd);
	return 0;
}

static void program_per_minor_count(void **state)
{
	struct bpf_insn insns[KFD_CONFINE_MAX + 11];
	uint32_t minors[KFD_CONFINE_MAX];
	size_t i;
	int n, ret;

	(void)state;
	for (i = 0; i < KFD_CONFINE_MAX; i++)
		minors[i] = 128 + (uint32_t)i;
	assert_int_equal(kfd_confine_program(minors, 2, insns, KFD_CONFINE_MAX + 11), 13);
	assert_int_equal(kfd_confine_program(minors, 0, insns, KFD_CONFINE_MAX + 11), 11);
	assert_int_equal(
		kfd_confine_program(minors, KFD_CONFINE_MAX + 1, insns, KFD_CONFINE_MAX + 11),
		-E2BIG);
	assert_int_equal(kfd_confine_program(minors, 4, insns, 14), -E2BIG);
	n = kfd_confine_program(minors, KFD_CONFINE_MAX, insns, KFD_CONFINE_MAX + 11);
	assert_int_equal(n, KFD_CONFINE_MAX + 11);
	ret = verifier_load(insns, n);
	if (ret == -EPERM)
		skip();
	assert_int_equal(ret, 0);
	n = kfd_confine_program(minors, 1, insns, KFD_CONFINE_MAX + 11);
	assert_int_equal(verifier_load(insns, n), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(program_per_minor_count),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
