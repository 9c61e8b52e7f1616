// SPDX-License-Identifier: MIT
/*
 * The master's part of restoring shared BOs (plugin/restore/restore_share.h):
 * share records for the origins that imports and dma-buf files take, and
 * the refusal of checkpoints whose shares do not hold together (an import
 * without its origin, two origins, a dma-buf file of no BO; an import from
 * another GPU is fine). Also the share records' protocol (plugin/restore/shared_state.h):
 * publish, wait, take, wait until taken, fail.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plugin/restore/restore.h"
#include "plugin/restore/restore_share.h"

#define MAX_BOS 4

/* Two processes on one checkpointed GPU each (actual ids 100, 200), up to MAX_BOS BOs. */
struct fixture {
	struct restore_session s;
	struct kfd_process_image procs[2];
	KfdProcessEntry entries[2];
	KfdDeviceEntry devices[2], *device_ptrs[2];
	KfdBoEntry bos[2][MAX_BOS], *bo_ptrs[2][MAX_BOS];
	struct dmabuf_file_image file;
	DmabufFileEntry file_entry;
};

static void add_bo(struct fixture *f, int p, uint32_t share_id, bool import)
{
	KfdProcessEntry *e = &f->entries[p];
	KfdBoEntry *b = &f->bos[p][e->n_bos];

	kfd_bo_entry__init(b);
	b->gpu_id = f->devices[p].user_gpu_id;
	b->addr = 0x100000ull * (e->n_bos + 1);
	b->size = 4096;
	b->alloc_flags = KFD_IOC_ALLOC_MEM_FLAGS_VRAM;
	b->share_id = share_id;
	b->shared_import = import;
	f->bo_ptrs[p][e->n_bos++] = b;
}

static void setup(struct fixture *f, uint32_t actual0, uint32_t actual1)
{
	uint32_t ids[2] = {11, 22}, actual[2] = {actual0, actual1};
	int p;

	memset(f, 0, sizeof(*f));
	for (p = 0; p < 2; p++) {
		kfd_process_entry__init(&f->entries[p]);
		kfd_device_entry__init(&f->devices[p]);
		f->devices[p].user_gpu_id = 7;
		f->devices[p].actual_gpu_id = actual[p];
		f->device_ptrs[p] = &f->devices[p];
		f->entries[p].pid = 500 + (uint32_t)p;
		f->entries[p].devices = &f->device_ptrs[p];
		f->entries[p].n_devices = 1;
		f->entries[p].bos = f->bo_ptrs[p];
		f->procs[p].id = ids[p];
		f->procs[p].entry = &f->entries[p];
	}
	f->s.procs = f->procs;
	f->s.n_procs = 2;
	f->s.shared = shared_state_create(ids, 2);
	assert_non_null(f->s.shared);
}

static void add_file(struct fixture *f, uint32_t share_id)
{
	dmabuf_file_entry__init(&f->file_entry);
	f->file_entry.share_id = share_id;
	f->file.id = 33;
	f->file.entry = &f->file_entry;
	f->s.dmabufs = &f->file;
	f->s.n_dmabufs = 1;
}

static void teardown(struct fixture *f)
{
	shared_state_destroy(f->s.shared);
}

static void origins_and_takers(void **state)
{
	struct fixture f;
	struct shared_share rec;

	(void)state;
	setup(&f, 100, 100);
	add_bo(&f, 0, 1, false); /* origin of share 1, in file 11 */
	add_bo(&f, 0, 2, false); /* nobody takes share 2: no record */
	add_bo(&f, 1, 1, true);	 /* file 22 imports share 1 */
	add_bo(&f, 1, 3, false);
	add_file(&f, 1); /* and a dma-buf fd of it is held */
	assert_int_equal(restore_share_prepare(&f.s), 0);
	assert_int_equal(f.s.shared->n_shares, 1);
	assert_int_equal(shared_share_get(f.s.shared, 1, &rec, shared_deadline(1000)), 0);
	assert_int_equal(rec.origin_image, 11);
	assert_int_equal(rec.importers, 2);
	assert_int_equal(rec.state, SHARED_SHARE_PENDING);
	assert_int_equal(shared_share_get(f.s.shared, 2, &rec, shared_deadline(1000)), -ENOENT);
	teardown(&f);
}

static void damaged(void **state)
{
	struct fixture f;

	(void)state;
	setup(&f, 100, 100); /* an import without its origin */
	add_bo(&f, 1, 4, true);
	assert_int_equal(restore_share_prepare(&f.s), -EINVAL);
	teardown(&f);

	setup(&f, 100, 100); /* two origins of one share */
	add_bo(&f, 0, 1, false);
	add_bo(&f, 1, 1, false);
	add_bo(&f, 1, 1, true);
	assert_int_equal(restore_share_prepare(&f.s), -EINVAL);
	teardown(&f);

	setup(&f, 100, 200); /* an import from another GPU is fine (a GTT BO there) */
	add_bo(&f, 0, 1, false);
	add_bo(&f, 1, 1, true);
	assert_int_equal(restore_share_prepare(&f.s), 0);
	assert_int_equal(f.s.shared->n_shares, 1);
	teardown(&f);

	setup(&f, 100, 100); /* a dma-buf file of no BO */
	add_bo(&f, 0, 1, false);
	add_file(&f, 9);
	assert_int_equal(restore_share_prepare(&f.s), -EINVAL);
	teardown(&f);
}

static void protocol(void **state)
{
	struct fixture f;
	struct shared_share rec = {.pid = 600, .fd = 4100, .gpu_id = 300, .offset = 0x5000};

	(void)state;
	setup(&f, 100, 100);
	add_bo(&f, 0, 1, false);
	add_bo(&f, 1, 1, true);
	assert_int_equal(restore_share_prepare(&f.s), 0);
	/* not published yet: a waiter times out, the origin cannot close yet */
	assert_int_equal(shared_share_wait(f.s.shared, 1, &rec, shared_deadline(30)), -ETIMEDOUT);
	rec = (struct shared_share){.pid = 600, .fd = 4100, .gpu_id = 300, .offset = 0x5000};
	assert_int_equal(shared_share_publish(f.s.shared, 1, &rec, shared_deadline(1000)), 0);
	assert_int_equal(shared_share_publish(f.s.shared, 1, &rec, shared_deadline(1000)),
			 -EALREADY);
	assert_int_equal(shared_share_publish(f.s.shared, 5, &rec, shared_deadline(1000)), -ENOENT);
	memset(&rec, 0, sizeof(rec));
	assert_int_equal(shared_share_wait(f.s.shared, 1, &rec, shared_deadline(1000)), 0);
	assert_int_equal(rec.state, SHARED_SHARE_PUBLISHED);
	assert_int_equal(rec.pid, 600);
	assert_int_equal(rec.fd, 4100);
	assert_int_equal(rec.offset, 0x5000);
	assert_int_equal(shared_share_wait_taken(f.s.shared, 1, shared_deadline(30)), -ETIMEDOUT);
	assert_int_equal(shared_share_took(f.s.shared, 1, shared_deadline(1000)), 0);
	assert_int_equal(shared_share_wait_taken(f.s.shared, 1, shared_deadline(1000)), 0);
	/* a failed origin fails its takers at once */
	assert_int_equal(shared_share_add_taker(f.s.shared, 8, 11), 0);
	assert_int_equal(shared_share_fail(f.s.shared, 8, -ENOMEM, shared_deadline(1000)), 0);
	assert_int_equal(shared_share_wait(f.s.shared, 8, &rec, shared_deadline(1000)), 0);
	assert_int_equal(rec.state, SHARED_SHARE_FAILED);
	assert_int_equal(rec.error, -ENOMEM);
	teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(origins_and_takers),
		cmocka_unit_test(damaged),
		cmocka_unit_test(protocol),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
