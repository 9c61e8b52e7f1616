// SPDX-License-Identifier: MIT
/*
 * Dumps of BOs in host memory (bo_stream_bo.host_memory) read in place
 * through the engine's view op: the images are byte for byte those of a
 * dump through the staging ring (holes included; 64 KiB chunks, and 2.5
 * MiB ones across the CPU engine's window, with their indexes), mixed GPUs
 * round-trip (restores go through staging, whatever host_memory says),
 * progress and byte counts add up across both threads, an engine without a
 * view and O_DIRECT fall back to staging, and a failing view fails the dump
 * with its line and leaves no file.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bo_set.h"
#include "fd_compare.h"
#include "file_read.h"

/* BO b of GPU g is in host memory: every one of GPU 1, every other one of GPU 0. */
static void mark_host_memory(struct bo_set *s, bool all)
{
	uint32_t g, b;

	for (g = 0; g < s->gpu_count; g++)
		for (b = 0; b < s->gpus[g].bo_count; b++)
			s->bos[g][b].host_memory = all || g == 1 || b % 2 == 0;
}

static uint64_t host_bytes(const struct bo_set *s, uint32_t g)
{
	uint64_t n = 0;
	uint32_t b;

	for (b = 0; b < s->gpus[g].bo_count; b++)
		n += s->bos[g][b].host_memory ? s->bos[g][b].size : 0;
	return n;
}

static uint64_t all_bytes(const struct bo_set *s, uint32_t g)
{
	uint64_t n = 0;
	uint32_t b;

	for (b = 0; b < s->gpus[g].bo_count; b++)
		n += s->bos[g][b].size;
	return n;
}

static int open_image(struct fixture *f, uint32_t image_id, uint32_t gpu_id)
{
	char name[64];
	int fd;

	snprintf(name, sizeof(name), "amdgpu-bo-%u-%u.img", image_id, gpu_id);
	fd = openat(f->dir_fd, name, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

/* The two images of a GPU hold the same bytes and the same holes. */
static void assert_same_image(struct fixture *f, uint32_t id_a, uint32_t id_b, uint32_t gpu_id)
{
	int a = open_image(f, id_a, gpu_id), b = open_image(f, id_b, gpu_id);
	struct stat sa, sb;

	assert_int_equal(fstat(a, &sa), 0);
	assert_int_equal(fstat(b, &sb), 0);
	assert_int_equal(sa.st_size, sb.st_size);
	assert_int_equal(sa.st_blocks, sb.st_blocks);
	assert_same_bytes(a, b, (uint64_t)sa.st_size);
	close(a);
	close(b);
}

struct progress_sum {
	atomic_uint_fast64_t last_done[2];
	atomic_uint_fast64_t final_calls;
};

static void note_progress(void *arg, uint32_t gpu_id, uint64_t done, uint64_t total)
{
	struct progress_sum *p = arg;

	assert_true(gpu_id == 0x1000 || gpu_id == 0x1001);
	assert_true(done <= total);
	atomic_store(&p->last_done[gpu_id - 0x1000], done);
	if (done == total)
		atomic_fetch_add(&p->final_calls, 1);
}

/*
 * GPU 0 mixes BOs in host memory (read in place by the producer) with others
 * (through the ring, written by the consumer), GPU 1 has only in-place BOs,
 * and a 3 MiB stretch of zeros in one of them: the images equal a staging
 * dump's, holes included; the restore is byte-exact; progress reaches each
 * GPU's total once; written, zero and in-place bytes add up.
 */
static void test_in_place_equals_staging(void **state)
{
	static const uint64_t sizes[] = {5 * MIB + 4096, 64 * KIB, 3 * MIB + 12345, 4096, 8192};
	struct fixture *f = *state;
	struct bo_stream_config cfg = small_chunks;
	struct progress_sum progress = {0};
	struct bo_set s;
	char err[256] = "";
	uint32_t g;

	set_build(&s, 2, sizes, 5);
	/* zeros in GPU 1's first BO: pages the dump leaves as holes */
	assert_int_equal(fallocate(s.src[1][0], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				   (off_t)MIB, (off_t)(3 * MIB)),
			 0);
	cfg.image_id = 1;
	cfg.sync = true;
	assert_int_equal(run_dump(f, &s, &cfg, NULL, err, sizeof(err)), 0);
	for (g = 0; g < 2; g++)
		assert_int_equal(s.gpus[g].in_place_bytes, 0);

	mark_host_memory(&s, false);
	cfg.image_id = 2;
	cfg.progress = note_progress;
	cfg.progress_arg = &progress;
	cfg.progress_step = 256 * KIB;
	assert_int_equal(run_dump(f, &s, &cfg, NULL, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(atomic_load(&progress.final_calls), 2);
	for (g = 0; g < 2; g++) {
		const struct bo_stream_gpu *gpu = &s.gpus[g];

		assert_int_equal(gpu->in_place_bytes, host_bytes(&s, g));
		assert_int_equal(atomic_load(&progress.last_done[g]), all_bytes(&s, g));
		assert_int_equal(gpu->written_bytes + gpu->zero_bytes, all_bytes(&s, g));
		assert_same_image(f, 1, 2, gpu->gpu_id);
	}
	assert_true(s.gpus[0].in_place_bytes > 0 && s.gpus[0].in_place_bytes < all_bytes(&s, 0));
	assert_int_equal(s.gpus[1].zero_bytes, 3 * MIB);

	/* the restore goes through staging, host memory or not */
	cfg.progress = NULL;
	assert_int_equal(run_restore(f, &s, &cfg, NULL, err, sizeof(err)), 0);
	assert_restored(&s);
	for (g = 0; g < 2; g++)
		assert_int_equal(s.gpus[g].in_place_bytes, 0);
	set_free(&s);
}

/* The index of image_id for gpu_id, which must equal `other` but for the
 * image id (offset 16) and the index's own CRC-32 (its last 4 bytes). */
static void assert_same_index(struct fixture *f, uint32_t image_id, uint32_t other, uint32_t gpu_id)
{
	uint8_t *a, *b;
	size_t len_a, len_b;
	char name[64];

	snprintf(name, sizeof(name), "amdgpu-bo-%u-%u.idx", image_id, gpu_id);
	a = file_read_all(f->dir_fd, name, &len_a);
	snprintf(name, sizeof(name), "amdgpu-bo-%u-%u.idx", other, gpu_id);
	b = file_read_all(f->dir_fd, name, &len_b);
	assert_int_equal(len_a, len_b);
	assert_true(len_a > 24);
	assert_memory_equal(a, b, 16);
	assert_memory_equal(a + 20, b + 20, len_a - 24);
	free(a);
	free(b);
}

/*
 * Chunks of 2.5 MiB (not a power of two; the other tests' are 64 KiB), with
 * stretches of zeros inside and across chunks, BOs ending mid-chunk, a BO
 * of zeros only, and one whose chunk 12 straddles the CPU engine's first 32
 * MiB window: an in-place dump's data file (holes included) and index
 * (every chunk's CRC-64, flags and offset) equal a staging dump's, and the
 * restore verifies and rebuilds every byte.
 */
static void test_in_place_large_chunks(void **state)
{
	static const uint64_t sizes[] = {6 * MIB + 8192, 2 * MIB + 4096, 3 * MIB, 33 * MIB + 4096};
	struct bo_stream_config cfg = {.chunk_size = 2560 * KIB, .ring_depth = 2};
	struct fixture *f = *state;
	struct bo_set s;
	char err[256] = "";

	set_build(&s, 1, sizes, 4);
	assert_int_equal(fallocate(s.src[0][0], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				   (off_t)(896 * KIB), (off_t)(1280 * KIB)),
			 0);
	assert_int_equal(fallocate(s.src[0][0], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				   (off_t)(4 * MIB), (off_t)(12 * KIB)),
			 0);
	/* BO 3's chunk 1 zero but for its last 1.25 MiB - 4 KiB */
	assert_int_equal(fallocate(s.src[0][3], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				   (off_t)(2560 * KIB), (off_t)(1284 * KIB)),
			 0);
	assert_int_equal(fallocate(s.src[0][2], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
				   (off_t)(3 * MIB)),
			 0);
	cfg.image_id = 1;
	assert_int_equal(run_dump(f, &s, &cfg, NULL, err, sizeof(err)), 0);
	mark_host_memory(&s, true);
	cfg.image_id = 2;
	assert_int_equal(run_dump(f, &s, &cfg, NULL, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(s.gpus[0].in_place_bytes, all_bytes(&s, 0));
	assert_int_equal(s.gpus[0].zero_bytes, 3 * MIB); /* BO 2: whole chunks of zeros */
	assert_same_image(f, 1, 2, s.gpus[0].gpu_id);
	assert_same_index(f, 1, 2, s.gpus[0].gpu_id);
	assert_int_equal(run_restore(f, &s, &cfg, NULL, err, sizeof(err)), 0);
	assert_restored(&s);
	set_free(&s);
}

/* An engine without a view (the SDMA engine has none) copies through staging. */
static int plain_read(void *bo, uint64_t off, void *buf, size_t len)
{
	return bo_copy_engine_cpu.ops->read(bo, off, buf, len);
}

static void test_engine_without_view(void **state)
{
	struct fixture *f = *state;
	struct bo_copy_engine_ops ops = {
		.open_bo = bo_copy_engine_cpu.ops->open_bo,
		.read = plain_read,
		.write = bo_copy_engine_cpu.ops->write,
		.close_bo = bo_copy_engine_cpu.ops->close_bo,
	};
	struct bo_copy_engine engine = {.ops = &ops};
	struct bo_set s;
	char err[256];

	set_build(&s, 1, mixed_sizes, MIXED_COUNT);
	mark_host_memory(&s, true);
	assert_int_equal(run_dump(f, &s, &small_chunks, &engine, err, sizeof(err)), 0);
	assert_int_equal(s.gpus[0].in_place_bytes, 0);
	assert_int_equal(run_restore(f, &s, &small_chunks, NULL, err, sizeof(err)), 0);
	assert_restored(&s);
	set_free(&s);
}

/*
 * With O_DIRECT (where the file system takes it) the dump goes through
 * staging, AUTO's too; an AUTO dump under its direct_min writes in place.
 */
static void test_direct_io_uses_staging(void **state)
{
	struct fixture *f = *state;
	struct bo_set s;
	struct bo_stream_config direct = small_chunks, automatic = small_chunks;
	char err[256];

	direct.write_mode = BO_WRITE_DIRECT;
	set_build(&s, 1, mixed_sizes, MIXED_COUNT);
	mark_host_memory(&s, true);
	assert_int_equal(run_dump(f, &s, &direct, NULL, err, sizeof(err)), 0);
	assert_int_equal(s.gpus[0].in_place_bytes, s.gpus[0].direct_io ? 0 : all_bytes(&s, 0));
	assert_int_equal(run_restore(f, &s, &small_chunks, NULL, err, sizeof(err)), 0);
	assert_restored(&s);
	set_free(&s);

	automatic.direct_min = 4096;
	automatic.image_id = small_chunks.image_id + 1;
	set_build(&s, 1, mixed_sizes, MIXED_COUNT);
	mark_host_memory(&s, true);
	assert_int_equal(run_dump(f, &s, &automatic, NULL, err, sizeof(err)), 0);
	assert_int_equal(s.gpus[0].in_place_bytes, s.gpus[0].direct_io ? 0 : all_bytes(&s, 0));
	assert_int_equal(run_restore(f, &s, &small_chunks, NULL, err, sizeof(err)), 0);
	assert_restored(&s);
	set_free(&s);

	automatic.direct_min = 0;
	automatic.image_id++;
	set_build(&s, 1, mixed_sizes, MIXED_COUNT);
	mark_host_memory(&s, true);
	assert_int_equal(run_dump(f, &s, &automatic, NULL, err, sizeof(err)), 0);
	assert_false(s.gpus[0].direct_io);
	assert_string_equal(s.gpus[0].write_note, "an image under 64 MiB");
	assert_int_equal(s.gpus[0].in_place_bytes, all_bytes(&s, 0));
	assert_int_equal(run_restore(f, &s, &small_chunks, NULL, err, sizeof(err)), 0);
	assert_restored(&s);
	set_free(&s);
}

/* A view that fails at its n-th call (or whose end does): the dump fails, naming it.
 * One GPU: one thread calls them. */
static int views_left;
static bool fail_end;

static int failing_view(void *bo, uint64_t off, size_t len, const void **p)
{
	if (!fail_end && views_left-- == 0)
		return -EIO;
	return bo_copy_engine_cpu.ops->view(bo, off, len, p);
}

static int failing_view_end(void *bo)
{
	int ret = bo_copy_engine_cpu.ops->view_end(bo);

	if (fail_end && views_left-- == 0)
		return -EIO;
	return ret;
}

static void test_view_failure(void **state)
{
	struct fixture *f = *state;
	struct bo_copy_engine_ops ops = *bo_copy_engine_cpu.ops;
	struct bo_copy_engine engine = {.ops = &ops};
	const char *want[] = {": copy engine view: ", ": copy engine view end: "};
	struct bo_set s;
	char err[256];
	int at, end;

	ops.view = failing_view;
	ops.view_end = failing_view_end;
	set_build(&s, 1, mixed_sizes, MIXED_COUNT); /* 24 chunks, all viewed by one thread */
	mark_host_memory(&s, true);
	for (end = 0; end < 2; end++)
		for (at = 0; at < 12; at += 5) {
			views_left = at;
			fail_end = end;
			assert_int_equal(run_dump(f, &s, &small_chunks, &engine, err, sizeof(err)),
					 -EIO);
			assert_non_null(strstr(err, want[end]));
			assert_non_null(strstr(err, " offset 0x"));
			assert_no_files(f);
		}
	set_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_in_place_equals_staging, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_in_place_large_chunks, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_engine_without_view, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_direct_io_uses_staging, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_view_failure, bo_fixture_setup,
						bo_fixture_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
