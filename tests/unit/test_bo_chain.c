// SPDX-License-Identifier: MIT
/*
 * Incremental BO images (datapath/bo_chain.h through bo_stream.h): three dumps
 * chained by "parent" links as CRIU's --prev-images-dir makes them, each
 * writing only the chunks that changed; restores of every link byte-exact;
 * BOs matched by GPU address when they move; a missing, replaced or damaged
 * parent refused with a line naming it, before any BO is written; a parent
 * that cannot be used makes a whole dump, saying why. All of it twice: BOs
 * through staging, then BOs in host memory, dumped in place
 * (bo_stream_bo.host_memory; restores go through staging all the same).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd_compare.h"
#include "datapath/bo_stream.h"
#include "index_old.h"

#define KIB   1024ull
#define CHUNK (64 * KIB)
#define BOS   3
#define LINKS 3
#define ID    5
#define GPU   0x2000u

static const uint64_t bo_sizes[BOS] = {1024 * KIB, 256 * KIB + 4096, 64 * KIB};
static const uint64_t bo_vas[BOS] = {0x7f0000000000ull, 0x7f0000200000ull, 0x7f0000400000ull};

/* The BOs are host memory (dumped in place): the second run of every test. */
static bool in_place;

struct fixture {
	char base[64];
	int dir[LINKS];	      /* d1, d2 (parent ../d1), d3 (parent ../d2) */
	int src[BOS];	      /* the application's BOs, changing between dumps */
	int snap[LINKS][BOS]; /* their contents at each dump */
};

static int make_memfd(uint64_t size)
{
	int fd = memfd_create("bo", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	return fd;
}

/* Pseudo-random bytes into [off, off + len) of fd. */
static void scribble(int fd, uint64_t off, uint64_t len, uint64_t seed)
{
	uint64_t buf[512], s = seed | 1;
	size_t i, n;

	while (len) {
		for (i = 0; i < 512; i++) {
			s ^= s << 13;
			s ^= s >> 7;
			s ^= s << 17;
			buf[i] = s;
		}
		n = len < sizeof(buf) ? (size_t)len : sizeof(buf);
		assert_int_equal(pwrite(fd, buf, n, (off_t)off), (ssize_t)n);
		off += n;
		len -= n;
	}
}

static void copy_fd(int from, int to, uint64_t size)
{
	static uint8_t buf[64 * KIB];
	uint64_t off;
	size_t n;

	for (off = 0; off < size; off += n) {
		n = size - off < sizeof(buf) ? (size_t)(size - off) : sizeof(buf);
		assert_int_equal(pread(from, buf, n, (off_t)off), (ssize_t)n);
		assert_int_equal(pwrite(to, buf, n, (off_t)off), (ssize_t)n);
	}
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char path[96];
	int i, b, base;

	if (!f)
		return -1;
	snprintf(f->base, sizeof(f->base), "%s", "/tmp/test-bo-chain-XXXXXX");
	if (!mkdtemp(f->base))
		return -1;
	base = open(f->base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (i = 0; i < LINKS; i++) {
		snprintf(path, sizeof(path), "d%d", i + 1);
		if (mkdirat(base, path, 0700))
			return -1;
		f->dir[i] = openat(base, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		snprintf(path, sizeof(path), "../d%d", i);
		if (i && symlinkat(path, f->dir[i], "parent"))
			return -1;
	}
	close(base);
	for (b = 0; b < BOS; b++) {
		f->src[b] = make_memfd(bo_sizes[b]);
		scribble(f->src[b], 0, bo_sizes[b], 100 + b);
		for (i = 0; i < LINKS; i++)
			f->snap[i][b] = make_memfd(bo_sizes[b]);
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];
	int i, b;

	for (i = 0; i < LINKS; i++)
		close(f->dir[i]);
	for (b = 0; b < BOS; b++) {
		close(f->src[b]);
		for (i = 0; i < LINKS; i++)
			close(f->snap[i][b]);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->base);
	if (system(cmd)) {
		/* a temporary directory left behind */
	}
	free(f);
	return 0;
}

/* Dumps the BOs (order[i]: which BO goes i-th) into link k, its parent link k - 1. */
static int dump_link(struct fixture *f, int k, const int *order, struct bo_stream_gpu *out,
		     char *err, size_t errlen)
{
	struct bo_stream_bo bos[BOS];
	struct bo_stream_gpu gpu = {.gpu_id = GPU, .bo_count = BOS, .bos = bos};
	struct bo_stream_config cfg = {.dir_fd = f->dir[k], .image_id = ID, .chunk_size = CHUNK};
	int i, ret;

	for (i = 0; i < BOS; i++) {
		int b = order ? order[i] : i;

		bos[i] = (struct bo_stream_bo){.size = bo_sizes[b],
					       .gpu_va = bo_vas[b],
					       .dmabuf_fd = dup(f->src[b]),
					       .host_memory = in_place};
		copy_fd(f->src[b], f->snap[k][b], bo_sizes[b]);
	}
	if (k) {
		cfg.has_parent = true;
		cfg.parent_dir_fd = openat(f->dir[k], "parent", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		assert_true(cfg.parent_dir_fd >= 0);
	}
	ret = bo_stream_dump(&cfg, &gpu, 1, err, errlen);
	if (!ret)
		assert_int_equal(gpu.in_place_bytes,
				 in_place ? bo_sizes[0] + bo_sizes[1] + bo_sizes[2] : 0);
	if (k)
		close(cfg.parent_dir_fd);
	if (out)
		*out = gpu;
	return ret;
}

/*
 * Restores link k into fresh BOs (in `order`): 0 and the BOs equal to that
 * dump's, or the error; a refused chain (any error but a checksum found
 * mid-stream) has written no BO.
 */
static int restore_link(struct fixture *f, int k, const int *order, char *err, size_t errlen)
{
	struct bo_stream_bo bos[BOS];
	struct bo_stream_gpu gpu = {.gpu_id = GPU, .bo_count = BOS, .bos = bos};
	struct bo_stream_config cfg = {.dir_fd = f->dir[k], .image_id = ID};
	int dst[BOS], i, ret;

	for (i = 0; i < BOS; i++) {
		int b = order ? order[i] : i;

		dst[i] = make_memfd(bo_sizes[b]);
		bos[i] = (struct bo_stream_bo){
			.size = bo_sizes[b], .dmabuf_fd = dup(dst[i]), .host_memory = in_place};
	}
	ret = bo_stream_restore(&cfg, &gpu, 1, err, errlen);
	if (!ret)
		assert_int_equal(gpu.in_place_bytes, 0); /* restores never work in place */
	for (i = 0; i < BOS; i++) {
		int b = order ? order[i] : i;
		struct stat st;

		if (!ret)
			assert_same_bytes(f->snap[k][b], dst[i], bo_sizes[b]);
		else if (ret != -EBADMSG) /* refused before any BO was written */
			assert_true(!fstat(dst[i], &st) && st.st_blocks == 0);
		close(dst[i]);
	}
	return ret;
}

/* Changes `n` chunks of BO b from chunk `first` on (a tenth of the memory, say). */
static void change_chunks(struct fixture *f, int b, uint64_t first, uint64_t n, uint64_t seed)
{
	scribble(f->src[b], first * CHUNK, n * CHUNK, seed);
}

static uint64_t allocated(int dir, const char *name)
{
	struct stat st;

	assert_int_equal(fstatat(dir, name, &st, 0), 0);
	return (uint64_t)st.st_blocks * 512;
}

#define TOTAL (1024 * KIB + 256 * KIB + 4096 + 64 * KIB)

static void test_three_dumps_write_what_changed(void **state)
{
	struct fixture *f = *state;
	struct bo_stream_chain chain;
	struct bo_stream_gpu g;
	char err[512] = "", name[64];
	int k;

	assert_int_equal(dump_link(f, 0, NULL, &g, err, sizeof(err)), 0);
	assert_int_equal(g.written_bytes, TOTAL);
	assert_int_equal(g.parent_bytes, 0);
	/* dump 2: 2 of the 16 chunks of BO 0 changed; dump 3: 1 chunk of BO 1 */
	change_chunks(f, 0, 3, 2, 7);
	assert_int_equal(dump_link(f, 1, NULL, &g, err, sizeof(err)), 0);
	assert_string_equal(g.parent_note, "");
	assert_int_equal(g.written_bytes, 2 * CHUNK);
	assert_int_equal(g.parent_bytes, TOTAL - 2 * CHUNK);
	change_chunks(f, 1, 2, 1, 8);
	assert_int_equal(dump_link(f, 2, NULL, &g, err, sizeof(err)), 0);
	assert_int_equal(g.written_bytes, CHUNK);
	assert_int_equal(g.parent_bytes, TOTAL - CHUNK);
	bo_stream_file_name(name, sizeof(name), ID, GPU, "img");
	assert_true(allocated(f->dir[1], name) <= 2 * CHUNK + 8 * KIB);
	assert_true(allocated(f->dir[2], name) <= CHUNK + 8 * KIB);
	assert_int_equal(
		bo_stream_describe(f->dir[2], ID, GPU, bo_sizes, BOS, &chain, err, sizeof(err)), 0);
	assert_int_equal(chain.levels, 2);
	assert_int_equal(chain.level_bytes[0], CHUNK);
	assert_int_equal(chain.level_bytes[1], 2 * CHUNK);
	assert_int_equal(chain.level_bytes[2], TOTAL - 3 * CHUNK);
	for (k = 0; k < LINKS; k++) {
		assert_int_equal(restore_link(f, k, NULL, err, sizeof(err)), 0);
		assert_int_equal(
			bo_stream_verify(f->dir[k], ID, GPU, bo_sizes, BOS, NULL, err, sizeof(err)),
			0);
	}
}

/*
 * A parent written before index version 3 (a CRC-32 and a CRC-64 per
 * chunk): the child compares the CRC-64s, refers to what did not change,
 * and both restore byte-exact, the parent verified by its CRC-32s, the
 * child (its parent's chunks too) by its own CRC-64s.
 */
static void test_version2_parent(void **state)
{
	struct fixture *f = *state;
	struct bo_stream_gpu g;
	char err[512] = "";

	assert_int_equal(dump_link(f, 0, NULL, NULL, err, sizeof(err)), 0);
	index_to_version2(f->dir[0], ID, GPU);
	change_chunks(f, 0, 3, 2, 7);
	assert_int_equal(dump_link(f, 1, NULL, &g, err, sizeof(err)), 0);
	assert_string_equal(g.parent_note, "");
	assert_int_equal(g.written_bytes, 2 * CHUNK);
	assert_int_equal(g.parent_bytes, TOTAL - 2 * CHUNK);
	assert_int_equal(restore_link(f, 0, NULL, err, sizeof(err)), 0);
	assert_int_equal(restore_link(f, 1, NULL, err, sizeof(err)), 0);
	assert_int_equal(
		bo_stream_verify(f->dir[1], ID, GPU, bo_sizes, BOS, NULL, err, sizeof(err)), 0);
}

/* A version 1 parent (a CRC-32 alone per chunk): nothing to compare by, the child written whole. */
static void test_version1_parent_means_whole_dump(void **state)
{
	struct fixture *f = *state;
	struct bo_stream_gpu g;
	char err[512] = "";

	assert_int_equal(dump_link(f, 0, NULL, NULL, err, sizeof(err)), 0);
	index_to_version1(f->dir[0], ID, GPU);
	change_chunks(f, 0, 3, 2, 7);
	assert_int_equal(dump_link(f, 1, NULL, &g, err, sizeof(err)), 0);
	assert_non_null(
		strstr(g.parent_note, "a version 1 index has no chunk CRC-64s to compare with"));
	assert_int_equal(g.written_bytes, TOTAL);
	assert_int_equal(g.parent_bytes, 0);
	assert_int_equal(restore_link(f, 0, NULL, err, sizeof(err)), 0);
	assert_int_equal(restore_link(f, 1, NULL, err, sizeof(err)), 0);
}

/* A BO freed and the others listed in another order: matched by GPU address. */
static void test_bos_matched_by_address(void **state)
{
	struct fixture *f = *state;
	static const int moved[BOS] = {2, 0, 1};
	struct bo_stream_gpu g;
	char err[512] = "";

	assert_int_equal(dump_link(f, 0, NULL, &g, err, sizeof(err)), 0);
	change_chunks(f, 2, 0, 1, 9);
	assert_int_equal(dump_link(f, 1, moved, &g, err, sizeof(err)), 0);
	assert_int_equal(g.written_bytes, CHUNK);
	assert_int_equal(restore_link(f, 1, moved, err, sizeof(err)), 0);
}

static void remove_file(int dir, const char *ext)
{
	char name[64];

	bo_stream_file_name(name, sizeof(name), ID, GPU, ext);
	assert_int_equal(unlinkat(dir, name, 0), 0);
}

/* A parent whose data file is gone: refused by the restore and by the files check. */
static void test_missing_parent_is_refused(void **state)
{
	struct fixture *f = *state;
	char err[512] = "";

	assert_int_equal(dump_link(f, 0, NULL, NULL, err, sizeof(err)), 0);
	change_chunks(f, 0, 0, 1, 10);
	assert_int_equal(dump_link(f, 1, NULL, NULL, err, sizeof(err)), 0);
	remove_file(f->dir[0], "img");
	assert_int_equal(restore_link(f, 1, NULL, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "refers to amdgpu-bo-5-8192.img in its parent directory"));
	assert_int_equal(bo_stream_check_files(f->dir[1], ID, GPU, bo_sizes, BOS, err, sizeof(err)),
			 -ENOENT);
	assert_int_equal(unlinkat(f->dir[1], "parent", 0), 0);
	assert_int_equal(restore_link(f, 1, NULL, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "'parent' cannot be opened"));
}

/* The parent dumped again (other contents) after the child was made on it. */
static void test_replaced_parent_is_refused(void **state)
{
	struct fixture *f = *state;
	char err[512] = "";

	assert_int_equal(dump_link(f, 0, NULL, NULL, err, sizeof(err)), 0);
	assert_int_equal(dump_link(f, 1, NULL, NULL, err, sizeof(err)), 0);
	remove_file(f->dir[0], "img");
	remove_file(f->dir[0], "idx");
	change_chunks(f, 0, 5, 1, 11);
	assert_int_equal(dump_link(f, 0, NULL, NULL, err, sizeof(err)), 0);
	assert_int_equal(restore_link(f, 1, NULL, err, sizeof(err)), -ESTALE);
	assert_non_null(strstr(err, "not the image it was dumped against"));
}

/* A byte of the parent's data flipped: the chunk's checksum names the parent's file. */
static void test_damaged_parent_data_is_named(void **state)
{
	struct fixture *f = *state;
	char err[512] = "", name[64];
	uint8_t c;
	int fd;

	assert_int_equal(dump_link(f, 0, NULL, NULL, err, sizeof(err)), 0);
	assert_int_equal(dump_link(f, 1, NULL, NULL, err, sizeof(err)), 0);
	bo_stream_file_name(name, sizeof(name), ID, GPU, "img");
	fd = openat(f->dir[0], name, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, 5 * CHUNK + 17), 1);
	c ^= 0x40;
	assert_int_equal(pwrite(fd, &c, 1, 5 * CHUNK + 17), 1);
	close(fd);
	assert_int_equal(restore_link(f, 1, NULL, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "checksum mismatch in amdgpu-bo-5-8192.img (parent level 1)"));
}

/* A parent with other chunk sizes cannot be compared with: the dump is whole and says so. */
static void test_unusable_parent_means_whole_dump(void **state)
{
	struct fixture *f = *state;
	struct bo_stream_bo bos[BOS];
	struct bo_stream_gpu g = {.gpu_id = GPU, .bo_count = BOS, .bos = bos};
	struct bo_stream_config cfg = {
		.dir_fd = f->dir[0], .image_id = ID, .chunk_size = 2 * CHUNK};
	char err[512] = "";
	int b;

	for (b = 0; b < BOS; b++)
		bos[b] = (struct bo_stream_bo){.size = bo_sizes[b], .dmabuf_fd = dup(f->src[b])};
	assert_int_equal(bo_stream_dump(&cfg, &g, 1, err, sizeof(err)), 0);
	assert_int_equal(dump_link(f, 1, NULL, &g, err, sizeof(err)), 0);
	assert_non_null(strstr(g.parent_note, "chunks of 131072 bytes, this dump uses 65536"));
	assert_int_equal(g.written_bytes, TOTAL);
	assert_int_equal(g.parent_bytes, 0);
	assert_int_equal(restore_link(f, 1, NULL, err, sizeof(err)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_three_dumps_write_what_changed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_version2_parent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_version1_parent_means_whole_dump, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bos_matched_by_address, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_parent_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_replaced_parent_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_damaged_parent_data_is_named, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unusable_parent_means_whole_dump, setup,
						teardown),
	};

	int failed = cmocka_run_group_tests_name("through staging", tests, NULL, NULL);

	in_place = true;
	return failed + cmocka_run_group_tests_name("in place", tests, NULL, NULL);
}
