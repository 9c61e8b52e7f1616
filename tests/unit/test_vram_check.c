// SPDX-License-Identifier: MIT
/*
 * vram_check(): VRAM needed per local GPU (page-aligned VRAM BOs of every
 * process mapped there; GTT, doorbells and other GPUs' BOs not counted)
 * against the free VRAM the callback reports.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "plugin/kfd_ioctl.h"
#include "images/vram_check.h"

#define VRAM KFD_IOC_ALLOC_MEM_FLAGS_VRAM
#define GTT  KFD_IOC_ALLOC_MEM_FLAGS_GTT

/* One process on two GPUs: user ids 11, 12; actual (dump-node) ids 101, 102. */
struct proc_fixture {
	KfdDeviceEntry dev[2];
	KfdDeviceEntry *devp[2];
	KfdBoEntry bo[5];
	KfdBoEntry *bop[5];
	KfdProcessEntry e;
	struct kfd_process_image img;
};

static void proc_init(struct proc_fixture *f, uint64_t gpu1_vram)
{
	size_t i;

	memset(f, 0, sizeof(*f));
	for (i = 0; i < 2; i++) {
		kfd_device_entry__init(&f->dev[i]);
		f->dev[i].user_gpu_id = 11 + (uint32_t)i;
		f->dev[i].actual_gpu_id = 101 + (uint32_t)i;
		f->devp[i] = &f->dev[i];
	}
	for (i = 0; i < 5; i++) {
		kfd_bo_entry__init(&f->bo[i]);
		f->bop[i] = &f->bo[i];
	}
	/* GPU 11: two VRAM BOs (one not page-sized), a GTT BO, a doorbell */
	f->bo[0] = (KfdBoEntry)KFD_BO_ENTRY__INIT;
	f->bo[0].gpu_id = 11, f->bo[0].size = gpu1_vram, f->bo[0].alloc_flags = VRAM;
	f->bo[1] = (KfdBoEntry)KFD_BO_ENTRY__INIT;
	f->bo[1].gpu_id = 11, f->bo[1].size = 100, f->bo[1].alloc_flags = VRAM;
	f->bo[2] = (KfdBoEntry)KFD_BO_ENTRY__INIT;
	f->bo[2].gpu_id = 11, f->bo[2].size = 1 << 30, f->bo[2].alloc_flags = GTT;
	f->bo[3] = (KfdBoEntry)KFD_BO_ENTRY__INIT;
	f->bo[3].gpu_id = 11, f->bo[3].size = 8192,
	f->bo[3].alloc_flags = KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL;
	/* GPU 12: one VRAM BO of 1 MiB */
	f->bo[4] = (KfdBoEntry)KFD_BO_ENTRY__INIT;
	f->bo[4].gpu_id = 12, f->bo[4].size = 1 << 20, f->bo[4].alloc_flags = VRAM;
	kfd_process_entry__init(&f->e);
	f->e.n_devices = 2;
	f->e.devices = f->devp;
	f->e.n_bos = 5;
	f->e.bos = f->bop;
	f->img.entry = &f->e;
}

static struct match_pair pairs[2] = {
	{.src_node = 2,
	 .src_gpu_id = 101,
	 .dst_node = 7,
	 .dst_gpu_id = 201,
	 .dst_render_minor = 133},
	{.src_node = 3,
	 .src_gpu_id = 102,
	 .dst_node = 8,
	 .dst_gpu_id = 202,
	 .dst_render_minor = 134},
};
static const struct match_result map = {.compatible = true, .map = pairs, .n_map = 2};

/* free VRAM per local gpu_id: 201 -> free[0], 202 -> free[1]; < 0: that error */
struct free_table {
	int64_t free[2];
	unsigned int calls;
};

static int table_free(void *arg, uint32_t gpu_id, uint64_t *bytes)
{
	struct free_table *t = arg;
	int64_t v = t->free[gpu_id - 201];

	t->calls++;
	if (v < 0)
		return (int)v;
	*bytes = (uint64_t)v;
	return 0;
}

static void need_counts_vram_of_that_gpu_page_aligned(void **state)
{
	struct proc_fixture f, g;
	struct kfd_process_image two[2];

	(void)state;
	proc_init(&f, 64ull << 20);
	assert_int_equal(vram_need_of(&f.img, 1, &pairs[0]), (64ull << 20) + 4096);
	assert_int_equal(vram_need_of(&f.img, 1, &pairs[1]), 1 << 20);
	/* two processes on the same GPUs: summed */
	proc_init(&g, 4096);
	two[0] = f.img;
	two[1] = g.img;
	two[1].entry = &g.e;
	assert_int_equal(vram_need_of(two, 2, &pairs[0]), (64ull << 20) + 4096 + 4096 + 4096);
}

static void fits_and_short(void **state)
{
	struct proc_fixture f;
	struct free_table t = {.free = {(64ll << 20) + 4096, 1 << 20}};
	struct vram_verdict v;

	(void)state;
	proc_init(&f, 64ull << 20);
	vram_check(&f.img, 1, &map, table_free, &t, &v);
	assert_false(v.short_of);
	assert_int_equal(v.checked, 2);
	assert_int_equal(v.unchecked, 0);
	/* one byte short on the second GPU */
	t.free[1] = (1 << 20) - 1;
	vram_check(&f.img, 1, &map, table_free, &t, &v);
	assert_true(v.short_of);
	assert_int_equal(v.pair.src_gpu_id, 102);
	assert_int_equal(v.pair.dst_gpu_id, 202);
	assert_int_equal(v.need, 1 << 20);
	assert_int_equal(v.free, (1 << 20) - 1);
	/* both short: the first is reported */
	t.free[0] = 0;
	vram_check(&f.img, 1, &map, table_free, &t, &v);
	assert_int_equal(v.pair.dst_gpu_id, 201);
	assert_int_equal(v.free, 0);
}

static void unreadable_free_is_unchecked_not_short(void **state)
{
	struct proc_fixture f;
	struct free_table t = {.free = {-EINVAL, 0}};
	struct vram_verdict v;

	(void)state;
	proc_init(&f, 4096);
	vram_check(&f.img, 1, &map, table_free, &t, &v);
	assert_int_equal(v.unchecked, 1);
	assert_int_equal(v.unchecked_gpu, 201);
	assert_int_equal(v.unchecked_err, -EINVAL);
	assert_int_equal(v.checked, 1);
	assert_true(v.short_of); /* 202 has 0 free for 1 MiB */
	assert_int_equal(v.pair.dst_gpu_id, 202);
}

static void gpus_without_vram_are_not_asked(void **state)
{
	struct proc_fixture f;
	struct free_table t = {.free = {0, 0}};
	struct vram_verdict v;
	size_t i;

	(void)state;
	proc_init(&f, 4096);
	for (i = 0; i < 5; i++)
		if (f.bo[i].alloc_flags == VRAM)
			f.bo[i].alloc_flags = GTT;
	vram_check(&f.img, 1, &map, table_free, &t, &v);
	assert_int_equal(t.calls, 0);
	assert_false(v.short_of);
	assert_int_equal(v.checked + v.unchecked, 0);
}

static void huge_sizes_saturate(void **state)
{
	struct proc_fixture f;
	struct free_table t = {.free = {INT64_MAX, INT64_MAX}};
	struct vram_verdict v;

	(void)state;
	proc_init(&f, UINT64_MAX - 10);
	assert_int_equal(vram_need_of(&f.img, 1, &pairs[0]), UINT64_MAX);
	vram_check(&f.img, 1, &map, table_free, &t, &v);
	assert_true(v.short_of);
	assert_int_equal(v.need, UINT64_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(need_counts_vram_of_that_gpu_page_aligned),
		cmocka_unit_test(fits_and_short),
		cmocka_unit_test(unreadable_free_is_unchecked_not_short),
		cmocka_unit_test(gpus_without_vram_are_not_asked),
		cmocka_unit_test(huge_sizes_saturate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
