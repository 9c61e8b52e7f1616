// SPDX-License-Identifier: MIT
/*
 * BOs that are one buffer (plugin/dump/bo_share.h): the policy variable, the
 * table by dma-buf inode (the first BO is kept, a second sharer is named),
 * fds of one file and of two, the line that names both BOs, and one
 * checkpointed process after another under each policy.
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

#include "plugin/dump/bo_share.h"

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

/* Two checkpointed processes whose BO 0 are fds of one file (one dma-buf). */
static void note_process(void **state)
{
	int fd = open("/dev/null", O_RDONLY), dup_fd = dup(fd), other = open("/dev/zero", O_RDONLY);
	const struct kfd_criu_device_bucket dev = {.user_gpu_id = 7, .actual_gpu_id = 70};
	struct kfd_criu_bo_bucket a[3] = {{.gpu_id = 7,
					   .size = 4096,
					   .alloc_flags = KFD_IOC_ALLOC_MEM_FLAGS_VRAM,
					   .dmabuf_fd = (uint32_t)fd},
					  {.gpu_id = 7,
					   .size = 4096,
					   .alloc_flags = KFD_IOC_ALLOC_MEM_FLAGS_GTT,
					   .dmabuf_fd = (uint32_t)other},
					  {.gpu_id = 7,
					   .alloc_flags = KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL,
					   .dmabuf_fd = 0xFFFFFFFFu}},
				  b[1] = {{.gpu_id = 7,
					   .size = 4096,
					   .alloc_flags = KFD_IOC_ALLOC_MEM_FLAGS_VRAM,
					   .dmabuf_fd = (uint32_t)dup_fd}};
	const struct bo_share_process
		pa = {.pid = 1, .devices = &dev, .n_devices = 1, .bos = a, .n_bos = 3},
		pb = {.pid = 2, .devices = &dev, .n_devices = 1, .bos = b, .n_bos = 1};
	const enum bo_share_policy policies[] = {BO_SHARE_SHARE, BO_SHARE_REFUSE, BO_SHARE_COPY};
	struct bo_share_table t;
	uint32_t ids[3];
	bool imports[3];
	size_t i;

	(void)state;
	assert_true(fd >= 0 && dup_fd >= 0 && other >= 0);
	for (i = 0; i < 3; i++) {
		bo_share_init(&t);
		memset(ids, 0, sizeof(ids));
		memset(imports, 0, sizeof(imports));
		assert_int_equal(bo_share_note_process(&t, policies[i], &pa, ids, imports), 0);
		assert_false(imports[0] || imports[1] || imports[2]);
		assert_int_equal(ids[2], 0); /* no dma-buf, no number */
		if (policies[i] == BO_SHARE_COPY) {
			assert_int_equal(ids[0], 0);
		} else {
			assert_int_equal(ids[0], 1);
			assert_int_equal(ids[1], 2);
		}
		memset(ids, 0, sizeof(ids));
		if (policies[i] == BO_SHARE_REFUSE) {
			assert_int_equal(bo_share_note_process(&t, policies[i], &pb, ids, imports),
					 -EOPNOTSUPP);
		} else {
			assert_int_equal(bo_share_note_process(&t, policies[i], &pb, ids, imports),
					 0);
			/* the second process's BO is an import of share 1 (copy: a BO of its own)
			 */
			assert_int_equal(imports[0], policies[i] == BO_SHARE_SHARE);
			assert_int_equal(ids[0], policies[i] == BO_SHARE_SHARE ? 1 : 0);
		}
		bo_share_fini(&t);
	}
	close(fd);
	close(dup_fd);
	close(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table),	    cmocka_unit_test(by_fd),
		cmocka_unit_test(describe), cmocka_unit_test(note_process),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
