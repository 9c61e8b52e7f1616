// SPDX-License-Identifier: MIT
/*
 * BOs that are one buffer (plugin/bo_share.h): the policy variable, the
 * table by dma-buf inode (the first BO is kept, a second sharer is named),
 * fds of one file and of two, and the line that names both BOs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/kfd_ioctl.h>

#include "plugin/bo_share.h"

static void policy(void **state)
{
	enum bo_share_policy p;
	char why[256] = "";

	(void)state;
	unsetenv("AMDGPU_CRIU_SHARED_BO");
	assert_int_equal(bo_share_policy_get(&p, why, sizeof(why)), 0);
	assert_int_equal(p, BO_SHARE_SHARE);
	setenv("AMDGPU_CRIU_SHARED_BO", "share", 1);
	assert_int_equal(bo_share_policy_get(&p, why, sizeof(why)), 0);
	assert_int_equal(p, BO_SHARE_SHARE);
	setenv("AMDGPU_CRIU_SHARED_BO", "copy", 1);
	assert_int_equal(bo_share_policy_get(&p, why, sizeof(why)), 0);
	assert_int_equal(p, BO_SHARE_COPY);
	setenv("AMDGPU_CRIU_SHARED_BO", "refuse", 1);
	assert_int_equal(bo_share_policy_get(&p, why, sizeof(why)), 0);
	assert_int_equal(p, BO_SHARE_REFUSE);
	setenv("AMDGPU_CRIU_SHARED_BO", "private", 1);
	assert_int_equal(bo_share_policy_get(&p, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "AMDGPU_CRIU_SHARED_BO=private: unknown"));
	unsetenv("AMDGPU_CRIU_SHARED_BO");
}

static void table(void **state)
{
	struct bo_share_table t;
	const struct bo_share_bo a = {.pid = 10, .gpu_id = 7, .addr = 0x1000, .size = 4096},
				 b = {.pid = 11, .gpu_id = 8, .addr = 0x2000, .size = 4096},
				 c = {.pid = 12, .gpu_id = 7, .addr = 0x3000, .size = 8192};
	const struct bo_share_bo *first = NULL;
	uint32_t id = 0;

	(void)state;
	bo_share_init(&t);
	assert_int_equal(bo_share_add(&t, 5, 100, &a, &first, &id), 0);
	assert_int_equal(id, 1);
	assert_int_equal(bo_share_add(&t, 5, 101, &b, &first, &id), 0);
	assert_int_equal(id, 2);
	assert_int_equal(bo_share_add(&t, 6, 100, &b, &first, &id), 0); /* other fs, same ino */
	assert_int_equal(id, 3);
	assert_null(first);
	assert_int_equal(bo_share_add(&t, 5, 100, &c, &first, &id), -EEXIST);
	assert_non_null(first);
	assert_int_equal(id, 1);
	assert_int_equal(first->pid, 10);
	assert_int_equal(first->addr, 0x1000);
	/* a third sharer still names the first, which stays in the table */
	assert_int_equal(bo_share_add(&t, 5, 100, &b, &first, &id), -EEXIST);
	assert_int_equal(first->pid, 10);
	assert_int_equal(id, 1);
	assert_int_equal(bo_share_add(&t, 5, 102, &c, &first, &id), 0); /* numbers go on */
	assert_int_equal(id, 4);
	assert_int_equal(t.n, 4);
	assert_int_equal(t.shared, 2);
	bo_share_fini(&t);
	assert_null(t.root);
}

static void by_fd(void **state)
{
	struct bo_share_table t;
	const struct bo_share_bo a = {.pid = 1}, b = {.pid = 2};
	const struct bo_share_bo *first = NULL;
	int fd = open("/dev/null", O_RDONLY), dup_fd = dup(fd), other = open("/dev/zero", O_RDONLY);
	uint32_t id;

	(void)state;
	assert_true(fd >= 0 && dup_fd >= 0 && other >= 0);
	bo_share_init(&t);
	assert_int_equal(bo_share_add_fd(&t, fd, &a, &first, &id), 0);
	assert_int_equal(bo_share_add_fd(&t, other, &b, &first, &id), 0);
	assert_int_equal(bo_share_add_fd(&t, dup_fd, &b, &first, &id), -EEXIST);
	assert_int_equal(first->pid, 1);
	assert_int_equal(id, 1);
	close(other);
	assert_int_equal(bo_share_add_fd(&t, other, &b, &first, &id), -EBADF);
	bo_share_fini(&t);
	close(fd);
	close(dup_fd);
}

static void describe(void **state)
{
	const struct bo_share_bo a = {.pid = 10,
				      .gpu_id = 7,
				      .addr = 0x7f0000200000,
				      .size = 2 << 20,
				      .alloc_flags = KFD_IOC_ALLOC_MEM_FLAGS_VRAM},
				 b = {.pid = 11,
				      .gpu_id = 8,
				      .addr = 0x7f0000600000,
				      .size = 2 << 20,
				      .alloc_flags = KFD_IOC_ALLOC_MEM_FLAGS_GTT};
	char line[512];

	(void)state;
	bo_share_describe(&a, &b, line, sizeof(line));
	assert_string_equal(line, "pid 10's BO at 0x7f0000200000 (2048 KiB of VRAM, GPU 7) and "
				  "pid 11's BO at 0x7f0000600000 (2048 KiB of GTT, GPU 8) are "
				  "one buffer (the same dma-buf: one was imported from the other, "
				  "AMDKFD_IOC_IMPORT_DMABUF)");
	bo_share_describe(&a, &b, line, 16); /* truncated, terminated */
	assert_int_equal(strlen(line), 15);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(policy),
		cmocka_unit_test(table),
		cmocka_unit_test(by_fd),
		cmocka_unit_test(describe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
