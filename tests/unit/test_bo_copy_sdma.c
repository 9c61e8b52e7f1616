// SPDX-License-Identifier: MIT
/*
 * The SDMA copy engine (datapath/bo_copy_sdma.c) under bo_stream, on the model
 * GPU of fake_amdgpu.c: byte-exact dump and restore over two GPUs at once,
 * files identical to the CPU engine's, zero chunks restored by CONST_FILL,
 * packets that never run past their ranges, staging buffers registered once,
 * and the kernel's failures (a cancelled submission, a fence error, a hung
 * engine) reported with the GPU, BO and offset, with everything released.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake_amdgpu.h"
#include "fd_compare.h"
#include "datapath/bo_copy_sdma.h"
#include "datapath/bo_stream.h"

#define MIB	   (1024ull * 1024)
#define GPUS	   2
#define BOS	   3
#define CHUNK	   (4u << 20)
#define DEPTH	   3u
#define GFX_MI210  90010u
#define RENDER_MIN 130u

struct fixture {
	char root[256], img[300], cpu_img[300], dev[300];
	int img_fd, cpu_img_fd;
	int src[GPUS][BOS], dst[GPUS][BOS];
	uint64_t sizes[BOS];
	struct bo_stream_bo bos[GPUS][BOS];
	struct bo_stream_gpu gpus[GPUS];
	struct bo_sdma_engine *sdma[GPUS];
};

static const char *tmp_root(void)
{
	const char *t = getenv("TMPDIR");

	return t && *t ? t : "/tmp";
}

static int make_memfd(uint64_t size)
{
	int fd = memfd_create("bo", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	return fd;
}

/* Random bytes, except [zero_off, zero_off + zero_len), which stays zero. */
static void fill(int fd, uint64_t size, uint32_t seed, uint64_t zero_off, uint64_t zero_len)
{
	uint8_t *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	uint64_t i, s = seed * 2654435761u + 1;

	assert_true(p != MAP_FAILED);
	for (i = 0; i < size; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		p[i] = i >= zero_off && i < zero_off + zero_len ? 0 : (uint8_t)(s >> 56);
	}
	munmap(p, size);
}

static void set_bytes(int fd, uint64_t size, int value)
{
	uint8_t *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	assert_true(p != MAP_FAILED);
	memset(p, value, size);
	munmap(p, size);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	uint32_t g, b;
	char node[400];
	int fd;

	assert_non_null(f);
	snprintf(f->root, sizeof(f->root), "%s/test-sdma-XXXXXX", tmp_root());
	assert_non_null(mkdtemp(f->root));
	snprintf(f->img, sizeof(f->img), "%s/img", f->root);
	snprintf(f->cpu_img, sizeof(f->cpu_img), "%s/cpu", f->root);
	snprintf(f->dev, sizeof(f->dev), "%s/dev", f->root);
	assert_int_equal(mkdir(f->img, 0700) | mkdir(f->cpu_img, 0700) | mkdir(f->dev, 0700), 0);
	f->img_fd = open(f->img, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	f->cpu_img_fd = open(f->cpu_img, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (g = 0; g < GPUS; g++) {
		snprintf(node, sizeof(node), "%s/renderD%u", f->dev, RENDER_MIN + g);
		fd = open(node, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
		assert_true(fd >= 0);
		close(fd);
	}
	/* one page; a chunk exactly; two chunks and an odd page, the middle chunk all zero */
	f->sizes[0] = 4096;
	f->sizes[1] = CHUNK;
	f->sizes[2] = 2ull * CHUNK + 12288;
	for (g = 0; g < GPUS; g++)
		for (b = 0; b < BOS; b++) {
			uint64_t size = f->sizes[b] + g * 8192;

			f->src[g][b] = make_memfd(size);
			f->dst[g][b] = make_memfd(size);
			fill(f->src[g][b], size, g * 10 + b + 1, b == 2 ? CHUNK : 0,
			     b == 2 ? CHUNK : 0);
			set_bytes(f->dst[g][b], size, 0x5a);
		}
	fake_amdgpu_reset();
	*state = f;
	return 0;
}

static void empty_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char name[600];

	if (!d)
		return;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(name, sizeof(name), "%s/%s", path, e->d_name);
			unlink(name);
		}
	closedir(d);
	rmdir(path);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	uint32_t g, b;

	for (g = 0; g < GPUS; g++) {
		bo_sdma_engine_close(f->sdma[g]);
		for (b = 0; b < BOS; b++) {
			close(f->src[g][b]);
			close(f->dst[g][b]);
		}
	}
	close(f->img_fd);
	close(f->cpu_img_fd);
	empty_dir(f->img);
	empty_dir(f->cpu_img);
	empty_dir(f->dev);
	rmdir(f->root);
	free(f);
	return 0;
}

static void open_engines(struct fixture *f)
{
	char err[256] = "";
	uint32_t g;

	for (g = 0; g < GPUS; g++) {
		struct bo_sdma_config cfg = {.gpu_id = 0x1000 + g,
					     .render_minor = RENDER_MIN + g,
					     .gfx_target_version = GFX_MI210,
					     .fence_timeout_ms = 300, /* the hung engine's wait */
					     .dev_dir = f->dev};

		bo_sdma_engine_close(f->sdma[g]);
		if (bo_sdma_engine_open(&cfg, &f->sdma[g], err, sizeof(err)))
			fail_msg("engine of GPU %u: %s", g, err);
	}
}

static void close_engines(struct fixture *f)
{
	uint32_t g;

	for (g = 0; g < GPUS; g++) {
		bo_sdma_engine_close(f->sdma[g]);
		f->sdma[g] = NULL;
	}
}

/* The stream's GPUs over the src (dump) or dst (restore) memfds; sdma: use the engines. */
static void give(struct fixture *f, bool restore, bool sdma)
{
	uint32_t g, b;

	for (g = 0; g < GPUS; g++) {
		f->gpus[g] = (struct bo_stream_gpu){.gpu_id = 0x1000 + g,
						    .bo_count = BOS,
						    .bos = f->bos[g],
						    .engine = sdma ? bo_sdma_engine_ops(f->sdma[g])
								   : NULL};
		for (b = 0; b < BOS; b++) {
			f->bos[g][b].size = f->sizes[b] + g * 8192;
			f->bos[g][b].dmabuf_fd = dup(restore ? f->dst[g][b] : f->src[g][b]);
			assert_true(f->bos[g][b].dmabuf_fd >= 0);
		}
	}
}

static uint32_t chunk_size = CHUNK; /* of the runs: tests may change it */

static int run(struct fixture *f, bool restore, bool sdma, int dir_fd, char *err, size_t len)
{
	struct bo_stream_config cfg = {
		.dir_fd = dir_fd, .image_id = 7, .chunk_size = chunk_size, .ring_depth = DEPTH};

	give(f, restore, sdma);
	return restore ? bo_stream_restore(&cfg, f->gpus, GPUS, err, len)
		       : bo_stream_dump(&cfg, f->gpus, GPUS, err, len);
}

static void assert_same_file(const char *a_dir, const char *b_dir, const char *name)
{
	char a[600], b[600];
	int fa, fb;
	struct stat sa, sb;

	snprintf(a, sizeof(a), "%s/%s", a_dir, name);
	snprintf(b, sizeof(b), "%s/%s", b_dir, name);
	fa = open(a, O_RDONLY | O_CLOEXEC);
	fb = open(b, O_RDONLY | O_CLOEXEC);
	assert_true(fa >= 0 && fb >= 0);
	assert_int_equal(fstat(fa, &sa) | fstat(fb, &sb), 0);
	assert_int_equal(sa.st_size, sb.st_size);
	assert_same_bytes(fa, fb, (uint64_t)sa.st_size);
	close(fa);
	close(fb);
}

static void test_round_trip(void **state)
{
	struct fixture *f = *state;
	struct bo_sdma_stats st;
	uint64_t total = 0, chunks = 0;
	char err[512] = "", name[64];
	uint32_t g, b;

	open_engines(f);
	if (run(f, false, true, f->img_fd, err, sizeof(err)))
		fail_msg("SDMA dump: %s", err);
	assert_string_equal(fake_gpu.fault, "");
	for (g = 0; g < GPUS; g++)
		for (b = 0; b < BOS; b++) {
			total += f->sizes[b] + g * 8192;
			chunks += (f->sizes[b] + g * 8192 + CHUNK - 1) / CHUNK;
		}
	assert_int_equal(fake_gpu.copy_bytes, total);
	/* one submission per chunk, not one per packet or per BO */
	assert_int_equal(fake_gpu.submissions, chunks);
	for (g = 0; g < GPUS; g++) {
		bo_sdma_engine_stats(f->sdma[g], &st);
		assert_true(st.bytes > 0 && st.submissions > 0);
	}
	/* the CPU engine writes the very same files */
	if (run(f, false, false, f->cpu_img_fd, err, sizeof(err)))
		fail_msg("CPU dump: %s", err);
	for (g = 0; g < GPUS; g++) {
		snprintf(name, sizeof(name), "amdgpu-bo-7-%u.img", 0x1000 + g);
		assert_same_file(f->img, f->cpu_img, name);
		snprintf(name, sizeof(name), "amdgpu-bo-7-%u.idx", 0x1000 + g);
		assert_same_file(f->img, f->cpu_img, name);
	}
	close_engines(f);
	assert_true(fake_amdgpu_all_released());

	fake_amdgpu_reset();
	open_engines(f);
	if (run(f, true, true, f->img_fd, err, sizeof(err)))
		fail_msg("SDMA restore: %s", err);
	assert_string_equal(fake_gpu.fault, "");
	for (g = 0; g < GPUS; g++)
		for (b = 0; b < BOS; b++)
			assert_same_bytes(f->src[g][b], f->dst[g][b], f->sizes[b] + g * 8192);
	/* the all-zero chunk of BO 2 (one per GPU) was filled, not copied */
	assert_int_equal(fake_gpu.fill_bytes, GPUS * (uint64_t)CHUNK);
	assert_int_equal(fake_gpu.copy_bytes + fake_gpu.fill_bytes, total);
	/* staging buffers are registered once each (a re-registration when one grows) */
	assert_true(fake_gpu.userptr_bos <= GPUS * 2 * DEPTH);
	close_engines(f);
	assert_true(fake_amdgpu_all_released());
}

/* ret is want; err names the GPU, BO, offset, the operation and `why`. */
static void assert_failed(int ret, int want, const char *err, const char *what, const char *why)
{
	assert_int_equal(ret, want);
	/* either GPU's thread may be the one whose submission fails */
	if ((!strstr(err, "gpu 4096:") && !strstr(err, "gpu 4097:")) || !strstr(err, "BO ") ||
	    !strstr(err, "offset 0x") || !strstr(err, what) || !strstr(err, why))
		fail_msg("unclear message: \"%s\"", err);
}

static bool dir_is_empty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	bool empty = true;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = false;
	closedir(d);
	return empty;
}

/* A GPU reset cancels the 2nd submission: the dump fails, names it, leaves nothing. */
static void test_cancelled_submission(void **state)
{
	struct fixture *f = *state;
	char err[512] = "";
	uint32_t b;

	open_engines(f);
	fake_gpu.fail_at = 2;
	fake_gpu.submit_error = -ECANCELED;
	assert_failed(run(f, false, true, f->img_fd, err, sizeof(err)), -ECANCELED, err,
		      "copy engine read", "the GPU was reset");
	assert_true(dir_is_empty(f->img));
	for (b = 0; b < BOS; b++)
		assert_int_equal(f->bos[0][b].dmabuf_fd, -1);
	close_engines(f);
	assert_true(fake_amdgpu_all_released());
	assert_string_equal(fake_gpu.fault, "");
}

/* The kernel's job timeout fires during the restore: ETIME, with the place. */
static void test_fence_error(void **state)
{
	struct fixture *f = *state;
	char err[512] = "";

	open_engines(f);
	assert_int_equal(run(f, false, true, f->img_fd, err, sizeof(err)), 0);
	close_engines(f);
	fake_amdgpu_reset();
	open_engines(f);
	fake_gpu.fail_at = 1;
	fake_gpu.fence_error = -ETIME;
	assert_failed(run(f, true, true, f->img_fd, err, sizeof(err)), -ETIME, err,
		      "copy engine write", "job timeout fired");
	close_engines(f);
	assert_true(fake_amdgpu_all_released());
}

/* A fence that never signals is a timeout with the place, never a hang. */
static void test_hung_engine(void **state)
{
	struct fixture *f = *state;
	char err[512] = "";

	open_engines(f);
	fake_gpu.fail_at = 1;
	fake_gpu.hang = true;
	assert_failed(run(f, false, true, f->img_fd, err, sizeof(err)), -ETIMEDOUT, err,
		      "copy engine read", "did not finish within the deadline");
	assert_true(dir_is_empty(f->img));
	close_engines(f);
	assert_true(fake_amdgpu_all_released());
}

/*
 * Chunks of 12 MiB: three packets each (4 MiB is one packet's most), one
 * submission per chunk; the round trip is exact all the same.
 */
static void test_chunks_of_several_packets(void **state)
{
	struct fixture *f = *state;
	char err[512] = "";
	uint32_t g, b;

	chunk_size = 12u << 20;
	open_engines(f);
	if (run(f, false, true, f->img_fd, err, sizeof(err)))
		fail_msg("SDMA dump: %s", err);
	/* one chunk per BO; packets: GPU 0 1 + 1 + 3, GPU 1 (8 KiB more a BO) 1 + 2 + 3 */
	assert_int_equal(fake_gpu.submissions, GPUS * 3);
	assert_int_equal(fake_gpu.copy_packets, 5 + 6);
	close_engines(f);
	fake_amdgpu_reset();
	open_engines(f);
	if (run(f, true, true, f->img_fd, err, sizeof(err)))
		fail_msg("SDMA restore: %s", err);
	for (g = 0; g < GPUS; g++)
		for (b = 0; b < BOS; b++)
			assert_same_bytes(f->src[g][b], f->dst[g][b], f->sizes[b] + g * 8192);
	assert_string_equal(fake_gpu.fault, "");
	close_engines(f);
	assert_true(fake_amdgpu_all_released());
	chunk_size = CHUNK;
}

/* Opening fails cleanly, saying why, with nothing left open. */
static void test_open_errors(void **state)
{
	struct fixture *f = *state;
	struct bo_sdma_config cfg = {.gpu_id = 0x1000,
				     .render_minor = RENDER_MIN,
				     .gfx_target_version = 80003,
				     .dev_dir = f->dev};
	struct bo_sdma_engine *e = (void *)1;
	char err[256] = "";

	assert_int_equal(bo_sdma_engine_open(&cfg, &e, err, sizeof(err)), -EOPNOTSUPP);
	assert_null(e);
	assert_non_null(strstr(err, "gfx_target_version 80003"));

	cfg.gfx_target_version = GFX_MI210;
	cfg.render_minor = 199;
	assert_int_equal(bo_sdma_engine_open(&cfg, &e, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "renderD199"));

	cfg.render_minor = RENDER_MIN;
	fake_gpu.dma_engines = 0;
	assert_int_equal(bo_sdma_engine_open(&cfg, &e, err, sizeof(err)), -ENODEV);
	assert_non_null(strstr(err, "no SDMA engine"));
	assert_true(fake_amdgpu_all_released());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancelled_submission, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fence_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hung_engine, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chunks_of_several_packets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
