// SPDX-License-Identifier: MIT
/* UPDATE_VMA_MAP lookups: render-node BO ranges and /dev/kfd offsets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "plugin/restore/vma_map.h"

#define DOORBELL(gpu) (0xC000000000000000ull | ((uint64_t)(gpu) << 46))
#define MMIO(gpu)     ((uint64_t)(gpu) << 46)

static void make_map(struct vma_map *m, size_t n)
{
	struct vma_bo *bos = calloc(n, sizeof(*bos));
	struct vma_gpu *gpus = calloc(2, sizeof(*gpus));
	struct vma_kfd *kfd = calloc(2, sizeof(*kfd));
	size_t i;

	assert_non_null(bos);
	/* two GPUs (minors 128, 129); BOs of 2 pages at 4 GiB + 3 pages * i, reversed */
	for (i = 0; i < n; i++)
		bos[i] = (struct vma_bo){.old_minor = 128 + (uint32_t)(i % 2),
					 .old_offset = (1ull << 32) + 3 * 4096 * (n - i),
					 .size = 2 * 4096,
					 .new_offset = (1ull << 33) + 4096 * i,
					 .device = (uint32_t)(i % 2)};
	gpus[0] = (struct vma_gpu){.old_actual_gpu_id = 0x1111, .new_actual_gpu_id = 0x2222};
	gpus[1] = (struct vma_gpu){.old_actual_gpu_id = 0x3333, .new_actual_gpu_id = 0x4444};
	kfd[0] = (struct vma_kfd){.addr = 0x200000000, .new_offset = DOORBELL(0x2222)};
	kfd[1] = (struct vma_kfd){.addr = 0x100000000, .new_offset = MMIO(0x4444)};
	assert_int_equal(vma_map_init(m, bos, n, gpus, 2, kfd, 2), 0);
}

static void bo_ranges(void **state)
{
	struct vma_map m;
	const struct vma_bo *b;
	size_t i, n = 20000;

	(void)state;
	make_map(&m, n);
	for (i = 0; i < n; i++) {
		uint64_t off = (1ull << 32) + 3 * 4096 * (n - i);
		uint32_t minor = 128 + (uint32_t)(i % 2);

		b = vma_map_find_bo(&m, minor, off);
		assert_non_null(b);
		assert_int_equal(b->new_offset, (1ull << 33) + 4096 * i);
		/* a VMA split inside the BO */
		assert_ptr_equal(vma_map_find_bo(&m, minor, off + 4096), b);
		/* the page after the BO is a hole; the other GPU's minor has no BO here */
		assert_null(vma_map_find_bo(&m, minor, off + 2 * 4096));
		assert_null(vma_map_find_bo(&m, minor ^ 1, off));
	}
	assert_null(vma_map_find_bo(&m, 128, 0));
	assert_null(vma_map_find_bo(&m, 130, (1ull << 32) + 3 * 4096));
	vma_map_free(&m);
}

static void overlap_refused(void **state)
{
	struct vma_bo *bos = calloc(2, sizeof(*bos));
	struct vma_map m;

	(void)state;
	bos[0] = (struct vma_bo){.old_minor = 128, .old_offset = 8192, .size = 8192};
	bos[1] = (struct vma_bo){.old_minor = 128, .old_offset = 12288, .size = 4096};
	assert_int_equal(vma_map_init(&m, bos, 2, NULL, 0, NULL, 0), -22);
	vma_map_free(&m);
}

static void kfd_offsets(void **state)
{
	struct vma_map m;
	uint64_t out = 0;

	(void)state;
	make_map(&m, 4);
	/* by address: KFD rewrote the recorded pgoff to 0 */
	assert_int_equal(vma_map_kfd_offset(&m, 0x200000000, 0, &out), 0);
	assert_int_equal(out, DOORBELL(0x2222));
	assert_int_equal(vma_map_kfd_offset(&m, 0x100000000, 0, &out), 0);
	assert_int_equal(out, MMIO(0x4444));
	/* a full offset elsewhere: its gpu_id field is remapped, the rest kept */
	assert_int_equal(vma_map_kfd_offset(&m, 0x300000000, DOORBELL(0x3333) | 0x40, &out), 0);
	assert_int_equal(out, DOORBELL(0x4444) | 0x40);
	/* an unknown gpu_id is an error; no gpu_id at all is the event page */
	assert_int_equal(vma_map_kfd_offset(&m, 0x300000000, MMIO(0x5555), &out), -2);
	assert_int_equal(vma_map_kfd_offset(&m, 0x300000000, 0, &out), 0);
	assert_int_equal(out, 0x8000000000000000ull);
	vma_map_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bo_ranges),
		cmocka_unit_test(overlap_refused),
		cmocka_unit_test(kfd_offsets),
	};

	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
