// SPDX-License-Identifier: MIT
/*
 * bo_stream_dump() / bo_stream_restore() with memfds standing in for dma-bufs:
 * byte-exact round trips over several GPUs and BOs, corrupted and truncated
 * images, fd ownership on every path, faults injected at chunk k through a
 * test copy engine, offsets past 4 GiB (sparse memfds) and bounded memory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zlib.h>

#include "bo_set.h"
#include "fd_compare.h"
#include "datapath/bo_index.h"
#include "datapath/bo_stream.h"
#include "datapath/direct_read.h"
#include "file_read.h"
#include "index_old.h"

/*
 * Peak RSS growth allowed while streaming 2 GPUs with the default ring (2 x 4 x
 * 4 MiB of staging): ASan keeps freed blocks in quarantine and adds shadow
 * pages, so the dump's buffers stay resident while the restore allocates its own.
 */
#ifdef __SANITIZE_ADDRESS__
#define RSS_LIMIT_MIB 96
#else
#define RSS_LIMIT_MIB 40
#endif

/* ---- round trips ------------------------------------------------------------------------ */

struct progress_log {
	atomic_uint_fast64_t calls;
	atomic_uint_fast64_t final_calls;
};

static void count_progress(void *arg, uint32_t gpu_id, uint64_t done, uint64_t total)
{
	struct progress_log *log = arg;

	assert_true(gpu_id >= 0x1000 && done <= total);
	atomic_fetch_add(&log->calls, 1);
	if (done == total)
		atomic_fetch_add(&log->final_calls, 1);
}

static void test_round_trip_gpus_and_bos(void **state)
{
	struct fixture *f = *state;
	struct progress_log log = {0};
	struct bo_stream_config cfg = small_chunks;
	struct bo_set s;
	char err[256] = "";
	struct stat st;
	uint32_t g;

	set_build(&s, 3, mixed_sizes, MIXED_COUNT);
	cfg.image_id = 7;
	cfg.progress = count_progress;
	cfg.progress_arg = &log;
	cfg.progress_step = 256 * KIB;
	cfg.sync = true;
	assert_int_equal(run_dump(f, &s, &cfg, NULL, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(atomic_load(&log.final_calls), 3);
	assert_true(atomic_load(&log.calls) > 3 * 4);
	for (g = 0; g < 3; g++) {
		char name[64];

		snprintf(name, sizeof(name), "amdgpu-bo-7-%u.img", 0x1000 + g);
		assert_int_equal(fstatat(f->dir_fd, name, &st, 0), 0);
		assert_int_equal(st.st_mode & 07777, 0600);
		snprintf(name, sizeof(name), "amdgpu-bo-7-%u.idx", 0x1000 + g);
		assert_int_equal(fstatat(f->dir_fd, name, &st, 0), 0);
		assert_int_equal(st.st_mode & 07777, 0600);
	}
	assert_int_equal(run_restore(f, &s, &cfg, NULL, err, sizeof(err)), 0);
	assert_restored(&s);
	set_free(&s);
}

static void test_round_trip_defaults(void **state)
{
	static const uint64_t sizes[] = {9 * MIB, 4 * MIB};
	struct fixture *f = *state;
	struct bo_stream_config cfg = {0};
	struct bo_set s;
	char err[256];

	set_build(&s, 2, sizes, 2);
	assert_int_equal(run_dump(f, &s, &cfg, &bo_copy_engine_cpu, err, sizeof(err)), 0);
	assert_int_equal(run_restore(f, &s, &cfg, &bo_copy_engine_cpu, err, sizeof(err)), 0);
	assert_restored(&s);
	set_free(&s);
}

/* Does the fixture's directory take O_DIRECT? (tmpfs does from 6.6 on.) */
static bool dir_takes_direct(struct fixture *f)
{
	int fd = openat(f->dir_fd, "direct.probe", O_WRONLY | O_CREAT | O_CLOEXEC | O_DIRECT, 0600);

	if (fd >= 0)
		close(fd);
	unlinkat(f->dir_fd, "direct.probe", 0);
	return fd >= 0;
}

/*
 * cfg.write_mode DIRECT: page-aligned runs go with O_DIRECT, the rest
 * (a BO of MIB + 12345 bytes ends mid-page) through the page cache, into
 * the same file; every byte comes back. Where the file system refuses
 * O_DIRECT the dump says so (direct_io false, write_note why) and writes
 * buffered.
 */
static void test_round_trip_direct_io(void **state)
{
	struct fixture *f = *state;
	struct bo_stream_config cfg = small_chunks;
	bool direct = dir_takes_direct(f);
	struct bo_set s;
	char err[256] = "";
	uint32_t g;

	set_build(&s, 2, mixed_sizes, MIXED_COUNT);
	cfg.image_id = 9;
	cfg.sync = true;
	cfg.write_mode = BO_WRITE_DIRECT;
	assert_int_equal(run_dump(f, &s, &cfg, &bo_copy_engine_cpu, err, sizeof(err)), 0);
	for (g = 0; g < 2; g++) {
		assert_int_equal(s.gpus[g].direct_io, direct);
		assert_int_equal(!s.gpus[g].write_note[0], direct);
	}
	assert_int_equal(run_restore(f, &s, &cfg, &bo_copy_engine_cpu, err, sizeof(err)), 0);
	assert_restored(&s);
	/* BUFFERED: through the page cache, saying so */
	set_free(&s);
	set_build(&s, 1, mixed_sizes, MIXED_COUNT);
	cfg.image_id = 10;
	cfg.write_mode = BO_WRITE_BUFFERED;
	assert_int_equal(run_dump(f, &s, &cfg, &bo_copy_engine_cpu, err, sizeof(err)), 0);
	assert_false(s.gpus[0].direct_io);
	assert_string_equal(s.gpus[0].write_note, "buffered writes asked");
	assert_int_equal(run_restore(f, &s, &cfg, &bo_copy_engine_cpu, err, sizeof(err)), 0);
	assert_restored(&s);
	set_free(&s);
}

/*
 * AUTO: an image under direct_min bytes goes through the page cache, one of
 * at least that many with O_DIRECT (where the file system takes it and is
 * not tmpfs); both come back whole.
 */
static void test_write_mode_auto(void **state)
{
	struct fixture *f = *state;
	struct bo_stream_config cfg = small_chunks;
	bool direct = dir_takes_direct(f) && !direct_io_in_memory(f->dir_fd);
	struct bo_set s;
	char err[256] = "";

	set_build(&s, 1, mixed_sizes, MIXED_COUNT);
	cfg.image_id = 11;
	assert_int_equal(cfg.write_mode, BO_WRITE_AUTO);
	assert_int_equal(run_dump(f, &s, &cfg, &bo_copy_engine_cpu, err, sizeof(err)), 0);
	assert_false(s.gpus[0].direct_io);
	assert_string_equal(s.gpus[0].write_note, "an image under 64 MiB");
	assert_int_equal(run_restore(f, &s, &cfg, &bo_copy_engine_cpu, err, sizeof(err)), 0);
	assert_restored(&s);
	set_free(&s);

	set_build(&s, 1, mixed_sizes, MIXED_COUNT);
	cfg.image_id = 12;
	cfg.direct_min = 4096;
	assert_int_equal(run_dump(f, &s, &cfg, &bo_copy_engine_cpu, err, sizeof(err)), 0);
	assert_int_equal(s.gpus[0].direct_io, direct);
	assert_int_equal(run_restore(f, &s, &cfg, &bo_copy_engine_cpu, err, sizeof(err)), 0);
	assert_restored(&s);
	set_free(&s);
}

static void test_no_bos(void **state)
{
	struct fixture *f = *state;
	struct bo_stream_config cfg = {.image_id = 1};
	struct bo_set s;
	char err[256];

	set_build(&s, 2, NULL, 0);
	assert_int_equal(run_dump(f, &s, &cfg, NULL, err, sizeof(err)), 0);
	assert_true(file_exists(f, "amdgpu-bo-1-4097.idx"));
	assert_int_equal(run_restore(f, &s, &cfg, NULL, err, sizeof(err)), 0);
}

/* ---- damaged images ----------------------------------------------------------------------- */

static void flip_byte(struct fixture *f, const char *name, uint64_t off)
{
	int fd = openat(f->dir_fd, name, O_RDWR);
	uint8_t b;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, (off_t)off), 1);
	b ^= 0x40;
	assert_int_equal(pwrite(fd, &b, 1, (off_t)off), 1);
	close(fd);
}

/* Changes the file's size by delta, down to 10 bytes at least. */
static void truncate_file(struct fixture *f, const char *name, int64_t delta)
{
	int fd = openat(f->dir_fd, name, O_RDWR);
	struct stat st;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(ftruncate(fd, st.st_size + delta > 10 ? st.st_size + delta : 10), 0);
	close(fd);
}

/* Dumps the mixed set of 2 GPUs (image_id 3), returning it for a restore attempt. */
static void dump_mixed(struct fixture *f, struct bo_set *s)
{
	struct bo_stream_config cfg = small_chunks;
	char err[256];

	set_build(s, 2, mixed_sizes, MIXED_COUNT);
	cfg.image_id = 3;
	assert_int_equal(run_dump(f, s, &cfg, NULL, err, sizeof(err)), 0);
}

static int restore_mixed(struct fixture *f, struct bo_set *s, char *err, size_t errlen)
{
	struct bo_stream_config cfg = small_chunks;

	cfg.image_id = 3;
	return run_restore(f, s, &cfg, NULL, err, errlen);
}

static void test_corrupt_chunk_is_named(void **state)
{
	struct fixture *f = *state;
	struct bo_set s;
	char err[256];
	/* GPU 0x1001: BO 0 is 64K+4K, BO 1 4K, BO 2 4K+4K: BO 3 starts at 0x13000 + 0x2000. */
	uint64_t bo3 = (64 * KIB + 4096) + 4096 + (4096 + 4096) + 4096;

	dump_mixed(f, &s);
	flip_byte(f, "amdgpu-bo-3-4097.img", bo3 + 2 * 64 * KIB + 17);
	assert_int_equal(restore_mixed(f, &s, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "gpu 4097: BO 3 offset 0x20000: checksum mismatch"));
	assert_non_null(strstr(err, ", crc64 0x"));
	assert_null(strchr(err, '\n'));
	set_free(&s);
}

/*
 * Images written before index version 3 (a CRC-32 per chunk, which their
 * restore verifies; version 2 with a CRC-64 beside it) still restore and
 * verify, and a damaged chunk of one is still found, by its CRC-32.
 */
static void old_images_restore(struct fixture *f, void (*to_old)(int, uint32_t, uint32_t))
{
	struct bo_set s;
	char err[256];
	uint64_t bo3 = (64 * KIB + 4096) + 4096 + (4096 + 4096) + 4096, sizes[MIXED_COUNT];
	int i;

	dump_mixed(f, &s);
	to_old(f->dir_fd, 3, 0x1000);
	to_old(f->dir_fd, 3, 0x1001);
	assert_int_equal(restore_mixed(f, &s, err, sizeof(err)), 0);
	assert_restored(&s);
	for (i = 0; i < MIXED_COUNT; i++)
		sizes[i] = s.bos[1][i].size;
	assert_int_equal(
		bo_stream_verify(f->dir_fd, 3, 0x1001, sizes, MIXED_COUNT, NULL, err, sizeof(err)),
		0);
	flip_byte(f, "amdgpu-bo-3-4097.img", bo3 + 2 * 64 * KIB + 17);
	assert_int_equal(restore_mixed(f, &s, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "gpu 4097: BO 3 offset 0x20000: checksum mismatch"));
	assert_non_null(strstr(err, ", crc32 0x"));
	set_free(&s);
}

static void test_version2_images(void **state)
{
	old_images_restore(*state, index_to_version2);
}

static void test_version1_images(void **state)
{
	old_images_restore(*state, index_to_version1);
}

/* A version 3 index with the field version 2 kept its CRC-32 in set: refused. */
static void test_version3_reserved_field(void **state)
{
	struct fixture *f = *state;
	struct bo_set s;
	char err[256];
	uint8_t *idx;
	size_t len;

	dump_mixed(f, &s);
	idx = file_read_all(f->dir_fd, "amdgpu-bo-3-4096.idx", &len);
	idx[64 + 6 * 24] = 1; /* the first entry, after the header and 6 BO records */
	index_write_sealed(f->dir_fd, "amdgpu-bo-3-4096.idx", idx, len);
	free(idx);
	assert_int_equal(restore_mixed(f, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "gpu 4096: amdgpu-bo-3-4096.idx: chunk 0: reserved field set"));
	set_free(&s);
}

static void test_truncated_data(void **state)
{
	struct fixture *f = *state;
	struct bo_set s;
	char err[256];

	dump_mixed(f, &s);
	truncate_file(f, "amdgpu-bo-3-4096.img", -1);
	assert_int_equal(restore_mixed(f, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "gpu 4096: amdgpu-bo-3-4096.img is truncated"));
	truncate_file(f, "amdgpu-bo-3-4096.img", 4097);
	assert_int_equal(restore_mixed(f, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "too long"));
	set_free(&s);
}

static void test_damaged_index(void **state)
{
	struct fixture *f = *state;
	struct bo_set s;
	char err[256];

	dump_mixed(f, &s);
	flip_byte(f, "amdgpu-bo-3-4097.idx", 64 + 16 * MIXED_COUNT + 5);
	assert_int_equal(restore_mixed(f, &s, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "gpu 4097: amdgpu-bo-3-4097.idx: index checksum mismatch"));
	flip_byte(f, "amdgpu-bo-3-4097.idx", 64 + 16 * MIXED_COUNT + 5);

	flip_byte(f, "amdgpu-bo-3-4097.idx", 0);
	assert_int_equal(restore_mixed(f, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a BO index"));
	flip_byte(f, "amdgpu-bo-3-4097.idx", 0);

	truncate_file(f, "amdgpu-bo-3-4096.idx", -4);
	assert_int_equal(restore_mixed(f, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "amdgpu-bo-3-4096.idx"));
	truncate_file(f, "amdgpu-bo-3-4096.idx", -1000000);
	assert_int_equal(restore_mixed(f, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "file truncated"));

	assert_int_equal(unlinkat(f->dir_fd, "amdgpu-bo-3-4096.idx", 0), 0);
	assert_int_equal(restore_mixed(f, &s, err, sizeof(err)), -ENOENT);
	set_free(&s);
}

static void test_sizes_must_match(void **state)
{
	struct fixture *f = *state;
	struct bo_set s;
	char err[256];

	dump_mixed(f, &s);
	s.bos[1][4].size += 4096;
	assert_int_equal(restore_mixed(f, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "gpu 4097"));
	s.bos[1][4].size -= 4096;
	s.gpus[1].bo_count--;
	assert_int_equal(restore_mixed(f, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "5 expected"));
	s.gpus[1].bo_count++;
	assert_int_equal(restore_mixed(f, &s, err, sizeof(err)), 0);
	assert_restored(&s);
	set_free(&s);
}

/* ---- refused calls ------------------------------------------------------------------------ */

static void test_existing_files_are_kept(void **state)
{
	struct fixture *f = *state;
	struct bo_stream_config cfg = small_chunks;
	struct bo_set s;
	char err[256];
	int fd;

	fd = openat(f->dir_fd, "amdgpu-bo-0-4097.img", O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	close(fd);
	set_build(&s, 2, mixed_sizes, 2);
	assert_int_equal(run_dump(f, &s, &cfg, NULL, err, sizeof(err)), -EEXIST);
	assert_true(file_exists(f, "amdgpu-bo-0-4097.img"));
	assert_false(file_exists(f, "amdgpu-bo-0-4096.img"));
	set_free(&s);

	/* only the index exists: the data file (ours) goes, the index stays */
	assert_int_equal(unlinkat(f->dir_fd, "amdgpu-bo-0-4097.img", 0), 0);
	fd = openat(f->dir_fd, "amdgpu-bo-0-4096.idx", O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	close(fd);
	set_build(&s, 2, mixed_sizes, 2);
	assert_int_equal(run_dump(f, &s, &cfg, NULL, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "amdgpu-bo-0-4096.idx"));
	assert_true(file_exists(f, "amdgpu-bo-0-4096.idx"));
	assert_false(file_exists(f, "amdgpu-bo-0-4096.img"));
	assert_false(file_exists(f, "amdgpu-bo-0-4097.img"));
	set_free(&s);
}

static void test_bad_config_closes_fds(void **state)
{
	struct fixture *f = *state;
	struct bo_stream_config cfg = {.chunk_size = 1000};
	struct bo_set s;
	char err[256];

	set_build(&s, 2, mixed_sizes, 3);
	assert_int_equal(run_dump(f, &s, &cfg, NULL, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "chunk size"));
	cfg.chunk_size = 0;
	cfg.ring_depth = 1;
	assert_int_equal(run_restore(f, &s, &cfg, NULL, err, sizeof(err)), -EINVAL);
	cfg.ring_depth = 0;
	s.gpus[1].gpu_id = s.gpus[0].gpu_id;
	assert_int_equal(run_dump(f, &s, &cfg, NULL, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "listed twice"));
	assert_no_files(f);
	set_free(&s);
}

/* ---- fault injection ------------------------------------------------------------------------ */

enum fault_op { FAULT_OPEN, FAULT_READ, FAULT_WRITE };

struct fault_plan {
	enum fault_op op;
	int at; /* fail the at-th call (from 0) of op, over all GPUs */
	atomic_int calls;
};

struct fault_bo {
	struct fault_plan *plan;
	void *inner;
};

static bool fault_now(struct fault_plan *p, enum fault_op op)
{
	return p->op == op && atomic_fetch_add(&p->calls, 1) == p->at;
}

static int fault_open(const struct bo_copy_engine *e, int fd, uint64_t size, enum bo_access access,
		      void **bo)
{
	struct fault_plan *plan = e->priv;
	struct fault_bo *fb;
	int ret;

	if (fault_now(plan, FAULT_OPEN))
		return -ENOMEM;
	fb = calloc(1, sizeof(*fb));
	if (!fb)
		return -ENOMEM;
	fb->plan = plan;
	ret = bo_copy_engine_cpu.ops->open_bo(&bo_copy_engine_cpu, fd, size, access, &fb->inner);
	if (ret) {
		free(fb);
		return ret;
	}
	*bo = fb;
	return 0;
}

static int fault_read(void *bo, uint64_t off, void *buf, size_t len)
{
	struct fault_bo *fb = bo;

	if (fault_now(fb->plan, FAULT_READ))
		return -EIO;
	return bo_copy_engine_cpu.ops->read(fb->inner, off, buf, len);
}

static int fault_write(void *bo, uint64_t off, const void *buf, size_t len)
{
	struct fault_bo *fb = bo;

	if (fault_now(fb->plan, FAULT_WRITE))
		return -EIO;
	return bo_copy_engine_cpu.ops->write(fb->inner, off, buf, len);
}

static void fault_close(void *bo)
{
	struct fault_bo *fb = bo;

	bo_copy_engine_cpu.ops->close_bo(fb->inner);
	free(fb);
}

static const struct bo_copy_engine_ops fault_ops = {
	.open_bo = fault_open,
	.read = fault_read,
	.write = fault_write,
	.close_bo = fault_close,
};

static void test_fault_in_dump(void **state)
{
	static const int points[] = {0, 1, 5, 20, 44};
	struct fixture *f = *state;
	struct bo_stream_config cfg = small_chunks;
	struct fault_plan plan;
	struct bo_copy_engine engine = {.ops = &fault_ops, .priv = &plan};
	struct bo_set s;
	char err[256];
	size_t i;

	/* 3 GPUs x (2+0+1+4+17+1 chunks of 64 KiB..) = at least 45 reads. */
	set_build(&s, 3, mixed_sizes, MIXED_COUNT);
	for (i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
		plan = (struct fault_plan){.op = FAULT_READ, .at = points[i]};
		assert_int_equal(run_dump(f, &s, &cfg, &engine, err, sizeof(err)), -EIO);
		assert_non_null(strstr(err, ": copy engine read: "));
		assert_non_null(strstr(err, " offset 0x"));
		assert_no_files(f);
	}
	plan = (struct fault_plan){.op = FAULT_OPEN, .at = 4};
	assert_int_equal(run_dump(f, &s, &cfg, &engine, err, sizeof(err)), -ENOMEM);
	assert_non_null(strstr(err, "copy engine open"));
	assert_no_files(f);
	set_free(&s);
}

static void test_fault_in_restore(void **state)
{
	static const int points[] = {0, 3, 30, 44};
	struct fixture *f = *state;
	struct bo_stream_config cfg = small_chunks;
	struct fault_plan plan;
	struct bo_copy_engine engine = {.ops = &fault_ops, .priv = &plan};
	struct bo_set s;
	char err[256];
	size_t i;

	set_build(&s, 3, mixed_sizes, MIXED_COUNT);
	assert_int_equal(run_dump(f, &s, &cfg, NULL, err, sizeof(err)), 0);
	for (i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
		plan = (struct fault_plan){.op = FAULT_WRITE, .at = points[i]};
		assert_int_equal(run_restore(f, &s, &cfg, &engine, err, sizeof(err)), -EIO);
		assert_non_null(strstr(err, ": copy engine write: "));
	}
	plan = (struct fault_plan){.op = FAULT_OPEN, .at = 7};
	assert_int_equal(run_restore(f, &s, &cfg, &engine, err, sizeof(err)), -ENOMEM);
	/* The images are intact: a clean restore still works. */
	plan = (struct fault_plan){.op = FAULT_OPEN, .at = -1};
	assert_int_equal(run_restore(f, &s, &cfg, &engine, err, sizeof(err)), 0);
	assert_restored(&s);
	set_free(&s);
}

/* ---- beyond 4 GiB, bounded memory --------------------------------------------------------- */

/* ---- sparse images ---------------------------------------------------------------------- */

static uint64_t allocated_bytes(struct fixture *f, const char *name)
{
	struct stat st;

	assert_int_equal(fstatat(f->dir_fd, name, &st, 0), 0);
	return (uint64_t)st.st_blocks * 512;
}

static void put_byte(int fd, uint64_t off, uint8_t v)
{
	assert_int_equal(pwrite(fd, &v, 1, (off_t)off), 1);
}

static void punch_hole(struct fixture *f, const char *name, uint64_t off, uint64_t len)
{
	int fd = openat(f->dir_fd, name, O_RDWR);

	assert_true(fd >= 0);
	assert_int_equal(
		fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len),
		0);
	close(fd);
}

static uint8_t get_byte(struct fixture *f, const char *name, uint64_t off)
{
	int fd = openat(f->dir_fd, name, O_RDONLY);
	uint8_t v = 0;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &v, 1, (off_t)off), 1);
	close(fd);
	return v;
}

/*
 * A mostly-zero BO: its image holds its non-zero pages only (zero pages are
 * holes), and the restore is byte-exact even into a BO that was not zero
 * (holes read as zeros, which are written). Marked bytes: the BO's first
 * byte, the last byte of chunk 3 (the only non-zero byte of that chunk), one
 * in the middle of a page, the BO's last byte; BO 1 follows at an odd offset,
 * random all through. A byte put into a hole, and a hole punched into data,
 * are checksum mismatches (the restore reads no hole, but checks each one).
 */
/* ---- where the time went ----------------------------------------------------------------- */

static int slow_read(void *bo, uint64_t off, void *buf, size_t len)
{
	usleep(10 * 1000);
	return bo_copy_engine_cpu.ops->read(bo, off, buf, len);
}

static const struct bo_copy_engine_ops slow_ops = {
	.open_bo = NULL, /* set from the CPU engine's below */
	.read = slow_read,
};

/* An engine taking 10 ms a chunk: its busy time is counted, inside the wall time. */
static void test_times(void **state)
{
	static const uint64_t sizes[] = {8 * 64 * KIB};
	struct fixture *f = *state;
	struct bo_copy_engine_ops ops = slow_ops;
	struct bo_copy_engine engine = {.ops = &ops};
	const struct bo_stream_times *t;
	struct bo_set s;
	char err[256];

	ops.open_bo = bo_copy_engine_cpu.ops->open_bo;
	ops.write = bo_copy_engine_cpu.ops->write;
	ops.close_bo = bo_copy_engine_cpu.ops->close_bo;
	set_build(&s, 1, sizes, 1);
	assert_int_equal(run_dump(f, &s, &small_chunks, &engine, err, sizeof(err)), 0);
	t = &s.gpus[0].times;
	print_message("engine %" PRIu64 " ms, file %" PRIu64 " ms, wall %" PRIu64 " ms\n",
		      t->engine_ns / 1000000, t->file_ns / 1000000, t->wall_ns / 1000000);
	assert_true(t->engine_ns >= 8 * 10 * 1000000ull);
	assert_true(t->file_ns > 0);
	assert_true(t->wall_ns >= t->engine_ns && t->wall_ns >= t->file_ns);
	/* the dump's CRC-64s run on the engine side, between its 10 ms reads */
	assert_true(t->checksum_ns > 0 && t->checksum_ns < t->engine_ns);
	set_free(&s);
}

static void test_hidden_permille(void **state)
{
	struct bo_stream_times t = {.wall_ns = 100, .engine_ns = 100, .file_ns = 50};

	(void)state;
	assert_int_equal(bo_stream_hidden_permille(&t), 1000); /* file fully behind the copy */
	t.wall_ns = 150;
	assert_int_equal(bo_stream_hidden_permille(&t), 0); /* one after the other */
	t.wall_ns = 125;
	assert_int_equal(bo_stream_hidden_permille(&t), 500);
	t.wall_ns = 200; /* waits besides: still nothing hidden */
	assert_int_equal(bo_stream_hidden_permille(&t), 0);
	t = (struct bo_stream_times){.wall_ns = 10, .engine_ns = 10};
	assert_int_equal(bo_stream_hidden_permille(&t), 0);
}

static void test_zero_pages_are_holes(void **state)
{
	static const uint64_t sizes[] = {64 * MIB + 4096 + 123, 3 * 4096 + 77};
	const uint64_t chunk = BO_STREAM_DEFAULT_CHUNK, bo0 = sizes[0];
	const uint64_t marks[] = {0, 4 * chunk - 1, 9 * MIB + 2049, bo0 - 1};
	struct fixture *f = *state;
	struct bo_stream_config cfg = {.image_id = 5};
	uint64_t used, i;
	struct bo_set s;
	char err[256];

	set_build(&s, 1, sizes, 2);
	assert_int_equal(ftruncate(s.src[0][0], 0), 0); /* BO 0 all zero ... */
	assert_int_equal(ftruncate(s.src[0][0], (off_t)bo0), 0);
	for (i = 0; i < 4; i++) /* ... but these bytes */
		put_byte(s.src[0][0], marks[i], (uint8_t)(0x11 * (i + 1)));
	assert_int_equal(run_dump(f, &s, &cfg, NULL, err, sizeof(err)), 0);
	used = allocated_bytes(f, "amdgpu-bo-5-4096.img");
	print_message("# %" PRIu64 "-byte image of a 64 MiB BO with 4 non-zero pages: %" PRIu64
		      " bytes allocated\n",
		      bo0 + sizes[1], used);
	/* the 4 pages of the marks, BO 1 (spanning 5 pages), file-system slack */
	assert_true(used <= 9 * 4096 + 64 * KIB);
	for (i = 0; i < 4; i++)
		assert_int_equal(get_byte(f, "amdgpu-bo-5-4096.img", marks[i]), 0x11 * (i + 1));

	fill_random(s.dst[0][0], bo0, 77); /* the restored BO starts not zero */
	assert_int_equal(run_restore(f, &s, &cfg, NULL, err, sizeof(err)), 0);
	assert_restored(&s);

	/* a hole is covered by its chunk's checksum like written bytes */
	flip_byte(f, "amdgpu-bo-5-4096.img", 6 * chunk + 100);
	assert_int_equal(run_restore(f, &s, &cfg, NULL, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "gpu 4096: BO 0 offset 0x1800000: checksum mismatch"));
	flip_byte(f, "amdgpu-bo-5-4096.img", 6 * chunk + 100); /* zero again, now written */
	assert_int_equal(run_restore(f, &s, &cfg, NULL, err, sizeof(err)), 0);
	assert_restored(&s);

	/* chunk 3 (its last byte is not zero) made a hole: zeros, a checksum mismatch */
	punch_hole(f, "amdgpu-bo-5-4096.img", 3 * chunk, chunk);
	assert_int_equal(run_restore(f, &s, &cfg, NULL, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "gpu 4096: BO 0 offset 0xc00000: checksum mismatch"));
	set_free(&s);
}

static void test_cpu_engine_offsets_past_4g(void **state)
{
	const struct bo_copy_engine_ops *ops = bo_copy_engine_cpu.ops;
	uint64_t size = 5 * GIB, cross = 4 * GIB - 5;
	char in[] = "crosses-4GiB", out[sizeof(in)] = "";
	int fd = make_memfd(size);
	void *bo;

	(void)state;
	assert_int_equal(pwrite(fd, in, sizeof(in), (off_t)cross), (ssize_t)sizeof(in));
	assert_int_equal(ops->open_bo(&bo_copy_engine_cpu, fd, size, BO_ACCESS_READ, &bo), 0);
	assert_int_equal(ops->read(bo, cross, out, sizeof(out)), 0);
	assert_string_equal(out, in);
	assert_int_equal(ops->read(bo, size - 4, out, 8), -EINVAL);
	assert_int_equal(ops->write(bo, 0, in, 4), -EBADF);
	ops->close_bo(bo);
	assert_int_equal(ops->open_bo(&bo_copy_engine_cpu, fd, size, BO_ACCESS_WRITE, &bo), 0);
	assert_int_equal(ops->write(bo, 4 * GIB + 4097, in, sizeof(in)), 0);
	ops->close_bo(bo);
	assert_int_equal(pread(fd, out, sizeof(out), (off_t)(4 * GIB + 4097)),
			 (ssize_t)sizeof(out));
	assert_string_equal(out, in);
	close(fd);
}

/*
 * pread/pwrite engine for sparse memfds: reading a memfd's holes through
 * read(2) allocates nothing (mmap would), and writing all-zero chunks into a
 * fresh memfd is skipped, so multi-GiB BOs cost no memory.
 */
struct sparse_bo {
	int fd;
};

static int sparse_open(const struct bo_copy_engine *e, int fd, uint64_t size, enum bo_access access,
		       void **bo)
{
	struct sparse_bo *sb = calloc(1, sizeof(*sb));

	(void)e, (void)size, (void)access;
	if (!sb)
		return -ENOMEM;
	sb->fd = fd;
	*bo = sb;
	return 0;
}

static int sparse_read(void *bo, uint64_t off, void *buf, size_t len)
{
	struct sparse_bo *sb = bo;

	return pread(sb->fd, buf, len, (off_t)off) == (ssize_t)len ? 0 : -EIO;
}

static int sparse_write(void *bo, uint64_t off, const void *buf, size_t len)
{
	const uint64_t *w = buf;
	struct sparse_bo *sb = bo;
	size_t i;

	for (i = 0; i < len / 8; i++)
		if (w[i])
			break;
	if (i == len / 8 && len % 8 == 0)
		return 0;
	return pwrite(sb->fd, buf, len, (off_t)off) == (ssize_t)len ? 0 : -EIO;
}

static void sparse_close(void *bo)
{
	free(bo);
}

static const struct bo_copy_engine_ops sparse_ops = {
	.open_bo = sparse_open,
	.read = sparse_read,
	.write = sparse_write,
	.close_bo = sparse_close,
};
static const struct bo_copy_engine sparse_engine = {.ops = &sparse_ops};

static long rss_now_kib(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Peak RSS growth, in KiB, of running fn in a child (the parent's peak does not count). */
static long child_peak_growth(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct rusage ru;
		long before = rss_now_kib();
		int ret = fn(arg);

		getrusage(RUSAGE_SELF, &ru);
		if (ret)
			_exit(255);
		_exit((int)((ru.ru_maxrss - before) / 1024 > 250 ? 250
								 : (ru.ru_maxrss - before) / 1024));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 255)
		fail_msg("the child's stream failed (see its stderr)");
	return WEXITSTATUS(status) * 1024;
}

struct big_job {
	struct fixture *f;
	const struct bo_copy_engine *engine;
	uint64_t sizes[2];
	const uint64_t *marks; /* offsets in BO 0 to put markers at, 0-terminated after the first */
	size_t mark_count;
};

static int check_marks(const struct big_job *j, int fd, uint64_t size)
{
	char want[32], got[32];
	size_t i;

	for (i = 0; i < j->mark_count; i++) {
		uint64_t off = j->marks[i] < size ? j->marks[i] : size - sizeof(want);

		memset(want, 0, sizeof(want));
		snprintf(want, sizeof(want), "mark@%" PRIx64, off);
		if (pread(fd, got, sizeof(got), (off_t)off) != (ssize_t)sizeof(got) ||
		    memcmp(want, got, sizeof(want))) {
			fprintf(stderr, "marker at 0x%" PRIx64 " lost\n", off);
			return -1;
		}
	}
	return 0;
}

static void put_marks(const struct big_job *j, int fd, uint64_t size)
{
	char mark[32];
	size_t i;

	for (i = 0; i < j->mark_count; i++) {
		uint64_t off = j->marks[i] < size ? j->marks[i] : size - sizeof(mark);

		memset(mark, 0, sizeof(mark));
		snprintf(mark, sizeof(mark), "mark@%" PRIx64, off);
		if (pwrite(fd, mark, sizeof(mark), (off_t)off) != (ssize_t)sizeof(mark))
			abort();
	}
}

/* GPU 0 gets the big BO; GPU 1 a small one in its place (the image dir is on disk). */
static uint64_t big_size(const struct big_job *j, int g, int b)
{
	return g == 0 || b == 1 ? j->sizes[b] : 8 * MIB;
}

/* In the child: 2 GPUs, BO 0 big and marked, BO 1 small and marked; round trip. */
static int big_round_trip(void *arg)
{
	struct big_job *j = arg;
	struct bo_stream_gpu gpus[2];
	struct bo_stream_bo bos[2][2];
	int src[2][2], dst[2][2], ret = 0, g, b;
	struct bo_stream_config cfg = {.dir_fd = j->f->dir_fd, .image_id = 9};
	char err[256];

	for (g = 0; g < 2; g++) {
		gpus[g] = (struct bo_stream_gpu){
			.gpu_id = 100 + g, .bo_count = 2, .bos = bos[g], .engine = j->engine};
		for (b = 0; b < 2; b++) {
			uint64_t size = big_size(j, g, b);

			src[g][b] = make_memfd(size);
			dst[g][b] = make_memfd(size);
			put_marks(j, src[g][b], size);
			bos[g][b] =
				(struct bo_stream_bo){.size = size, .dmabuf_fd = dup(src[g][b])};
		}
	}
	ret = bo_stream_dump(&cfg, gpus, 2, err, sizeof(err));
	for (g = 0; !ret && g < 2; g++)
		for (b = 0; b < 2; b++)
			bos[g][b].dmabuf_fd = dup(dst[g][b]);
	if (!ret)
		ret = bo_stream_restore(&cfg, gpus, 2, err, sizeof(err));
	if (ret)
		fprintf(stderr, "stream: %d %s\n", ret, err);
	for (g = 0; g < 2; g++)
		for (b = 0; b < 2; b++) {
			if (!ret && check_marks(j, dst[g][b], big_size(j, g, b)))
				ret = -1;
			close(src[g][b]);
			close(dst[g][b]);
		}
	return ret;
}

static void test_past_4g_bounded_memory(void **state)
{
	static const uint64_t marks[] = {0, 4 * GIB - 16, 4 * GIB + 64, 4 * GIB + 4 * MIB - 3,
					 ~0ull};
	struct fixture *f = *state;
	struct big_job j = {f, &sparse_engine, {4 * GIB + 8 * MIB + 4096, MIB}, marks, 5};
	long growth = child_peak_growth(big_round_trip, &j);
	struct stat st;

	print_message("# 4 GiB + 8 MiB BO round trip: peak RSS growth %ld MiB\n", growth / 1024);
	assert_true(growth <= RSS_LIMIT_MIB * 1024);
	assert_int_equal(fstatat(f->dir_fd, "amdgpu-bo-9-100.img", &st, 0), 0);
	assert_int_equal((uint64_t)st.st_size, j.sizes[0] + j.sizes[1]);
	/* sparse: the markers' pages (4 KiB each, one may straddle two) and BO 1's */
	print_message("# its image: %" PRIu64 " bytes, %" PRIu64 " allocated\n",
		      (uint64_t)st.st_size, (uint64_t)st.st_blocks * 512);
	assert_true((uint64_t)st.st_blocks * 512 <= 10 * 4096 + 64 * KIB);
}

static void test_cpu_engine_bounded_memory(void **state)
{
	static const uint64_t marks[] = {0, 256 * MIB + 5, ~0ull};
	struct fixture *f = *state;
	struct big_job j = {f, &bo_copy_engine_cpu, {512 * MIB, 4096}, marks, 3};
	long growth = child_peak_growth(big_round_trip, &j);

	print_message("# CPU engine, 2 GPUs x 512 MiB round trip: peak RSS growth %ld MiB\n",
		      growth / 1024);
	/* and each GPU's mapped window of BO pages (the BOs' memory, not ours) */
	assert_true(growth <= RSS_LIMIT_MIB * 1024 + 2 * (long)(BO_COPY_CPU_WINDOW >> 10));
}

/*
 * All-zero chunks get their checksum without a pass over them (a full
 * chunk's computed once per GPU, a shorter last one's from a page of
 * zeros): the index (version 3) holds the true CRC-64 of so many zeros, for
 * full chunks and a short last one alike, as a restore verifies and a child
 * dump compares them, and 0 where version 2 had a CRC-32.
 */
static void test_zero_chunk_checksums(void **state)
{
	static const uint64_t sizes[] = {3 * 64 * KIB + 5000};
	struct bo_stream_config cfg = small_chunks;
	struct fixture *f = *state;
	uint8_t entry[32], *zeros = calloc(1, 64 * KIB);
	uint64_t len, crc64, reserved;
	uint32_t crc32;
	struct bo_set s;
	char err[256];
	int fd, i;

	assert_non_null(zeros);
	cfg.image_id = 6;
	set_build(&s, 1, sizes, 1);
	assert_int_equal(ftruncate(s.src[0][0], 0), 0);
	assert_int_equal(ftruncate(s.src[0][0], (off_t)sizes[0]), 0);
	assert_int_equal(run_dump(f, &s, &cfg, NULL, err, sizeof(err)), 0);
	fd = openat(f->dir_fd, "amdgpu-bo-6-4096.idx", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	for (i = 0; i < 4; i++) {
		len = i < 3 ? 64 * KIB : 5000;
		/* header 64, one BO 24, entries of 32: {0, level, flags, offset, crc64, 0} */
		assert_int_equal(pread(fd, entry, sizeof(entry), 64 + 24 + 32 * i), sizeof(entry));
		memcpy(&crc32, entry, sizeof(crc32));
		assert_int_equal(crc32, 0);
		assert_int_equal(entry[6] & BO_CHUNK_ZERO, BO_CHUNK_ZERO);
		memcpy(&crc64, entry + 16, sizeof(crc64));
		assert_int_equal(le64toh(crc64), bo_index_crc64(0, zeros, len));
		memcpy(&reserved, entry + 24, sizeof(reserved));
		assert_int_equal(reserved, 0);
	}
	close(fd);
	free(zeros);
	set_free(&s);
}

/*
 * The image's CRC-32 is zlib's (bo_stream.h): ISA-L's must give the same
 * value for every length and alignment (its SIMD paths split at 16, 64 and
 * 256 bytes) and when chained, or images written before it would not verify.
 */
static void test_crc32_is_zlibs(void **state)
{
	enum { LEN = 1 << 16 };
	uint8_t *buf = malloc(LEN + 64);
	uint32_t seed = 12345, ours, chained;
	size_t len, off, cut;

	(void)state;
	assert_non_null(buf);
	for (len = 0; len < LEN + 64; len++) {
		seed = seed * 1103515245u + 12345u;
		buf[len] = (uint8_t)(seed >> 16);
	}
	for (len = 0; len <= LEN; len = len < 600 ? len + 1 : len * 3 + 7) {
		for (off = 0; off < 64; off += len < 600 ? 13 : 1) {
			ours = bo_index_crc32(0, buf + off, len);
			assert_int_equal(ours, (uint32_t)crc32_z(0, buf + off, len));
			cut = len / 3;
			chained = bo_index_crc32(bo_index_crc32(0, buf + off, cut), buf + off + cut,
						 len - cut);
			assert_int_equal(chained, ours);
		}
	}
	/* zero bytes by arithmetic (an index's holes): as if read */
	memset(buf, 0, LEN);
	for (len = 0; len <= LEN; len = len < 70 ? len + 1 : len * 2 + 3)
		for (seed = 0; seed < 3; seed++) {
			ours = seed ? bo_index_crc32(0, "abc", seed) : 0;
			assert_int_equal(bo_index_crc32_zeros(ours, len),
					 bo_index_crc32(ours, buf, len));
		}
	/* zlib's crc32_combine() agrees for sizes past any buffer */
	assert_int_equal(bo_index_crc32_zeros(0xcbf43926u, 1ull << 40),
			 (uint32_t)crc32_combine(0xcbf43926u, bo_index_crc32_zeros(0, 1ull << 40),
						 (z_off_t)(1ull << 40)));
	/* the check value of the standard CRC-32 */
	assert_int_equal(bo_index_crc32(0, "123456789", 9), 0xcbf43926u);
	/* the chunks' CRC-64 is CRC-64/XZ (its check value), and chains the same way */
	assert_int_equal(bo_index_crc64(0, "123456789", 9), 0x995dc9bbdf1939faull);
	assert_int_equal(bo_index_crc64(bo_index_crc64(0, "1234", 4), "56789", 5),
			 0x995dc9bbdf1939faull);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip_gpus_and_bos, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_round_trip_defaults, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_round_trip_direct_io, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_write_mode_auto, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_no_bos, bo_fixture_setup, bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_chunk_is_named, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_version2_images, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_version1_images, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_version3_reserved_field, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_truncated_data, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_damaged_index, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_sizes_must_match, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_existing_files_are_kept, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_bad_config_closes_fds, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_fault_in_dump, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_fault_in_restore, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_zero_pages_are_holes, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_zero_chunk_checksums, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_times, bo_fixture_setup, bo_fixture_teardown),
		cmocka_unit_test(test_hidden_permille),
		cmocka_unit_test(test_crc32_is_zlibs),
		cmocka_unit_test(test_cpu_engine_offsets_past_4g),
		cmocka_unit_test_setup_teardown(test_past_4g_bounded_memory, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_cpu_engine_bounded_memory, bo_fixture_setup,
						bo_fixture_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
