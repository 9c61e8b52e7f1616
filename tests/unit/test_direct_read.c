// SPDX-License-Identifier: MIT
/*
 * datapath/direct_read.h: O_DIRECT reads through io_uring give back the
 * file's bytes (aligned runs, a tail past the last page, many requests in
 * flight), the file's end is -ENODATA, and what cannot be read so (small
 * files, tmpfs) is refused with a reason. Then a restore through
 * bo_stream with each read mode: every byte back, the mode reported, a
 * damaged chunk still refused by its checksum.
 * The direct cases need a directory on a file system with O_DIRECT and a
 * kernel with io_uring (/tmp, as the other BO stream tests): elsewhere they
 * are skipped, saying why.
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
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include "bo_set.h"
#include "common/fullio.h"
#include "datapath/direct_read.h"

#define FILE_BYTES (5 * MIB + 1234)

static uint8_t *file_bytes(uint64_t len)
{
	uint8_t *p = malloc(len);
	uint64_t i, x = 0x9e3779b97f4a7c15ull;

	assert_non_null(p);
	for (i = 0; i < len; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		p[i] = (uint8_t)x;
	}
	return p;
}

/* A file of len known bytes in the fixture's directory; its fd. */
static int make_file(struct fixture *f, const char *name, const uint8_t *bytes, uint64_t len)
{
	int fd = openat(f->dir_fd, name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(pwrite_full(fd, bytes, len, 0), 0);
	assert_int_equal(fsync(fd), 0);
	return fd;
}

static uint8_t *aligned_buf(size_t len)
{
	void *p = NULL;

	assert_int_equal(posix_memalign(&p, DIRECT_READ_ALIGN, len ? len : 1), 0);
	return p;
}

/* Opens dr on fd; false (the test skipped, saying why) where this host cannot read so. */
static bool open_or_skip(struct direct_reader *dr, int fd, uint64_t size)
{
	char why[160] = "";
	int ret = direct_read_open(dr, fd, size, 0, why, sizeof(why));

	if (ret == -EOPNOTSUPP || ret == -EINVAL || ret == -ENOSYS || ret == -EPERM) {
		print_message("# no direct reads here: %s\n", why);
		return false;
	}
	assert_int_equal(ret, 0);
	return true;
}

static void test_bytes_come_back(void **state)
{
	struct fixture *f = *state;
	uint8_t *want = file_bytes(FILE_BYTES), *buf = aligned_buf(FILE_BYTES);
	struct direct_reader dr;
	int fd = make_file(f, "data", want, FILE_BYTES);

	if (!open_or_skip(&dr, fd, FILE_BYTES))
		goto out;
	/* one 4 MiB chunk: 8 requests of 512 KiB, all in flight at once */
	assert_int_equal(direct_read(&dr, buf, 4 * MIB, 4096), 0);
	assert_memory_equal(buf, want + 4096, 4 * MIB);
	assert_int_equal(dr.requests, 4 * MIB / DIRECT_READ_SEGMENT);
	assert_int_equal(dr.max_in_flight, DIRECT_READ_DEPTH);
	/* the whole file: more requests than the depth, and a tail past the last page */
	memset(buf, 0xa5, FILE_BYTES);
	assert_int_equal(direct_read(&dr, buf, FILE_BYTES, 0), 0);
	assert_memory_equal(buf, want, FILE_BYTES);
	/* a short piece at the end, from an aligned offset */
	assert_int_equal(direct_read(&dr, buf, 1234 + 8192, FILE_BYTES - 1234 - 8192), 0);
	assert_memory_equal(buf, want + FILE_BYTES - 1234 - 8192, 1234 + 8192);
	/* an unaligned offset or buffer: read through the page cache, same bytes */
	assert_int_equal(direct_read(&dr, buf + 1, 100000, 17), 0);
	assert_memory_equal(buf + 1, want + 17, 100000);
	/* past the end */
	assert_int_equal(direct_read(&dr, buf, 8192, FILE_BYTES - 4096), -ENODATA);
	/* the file cut short after open: its end comes early, never stale bytes */
	assert_int_equal(ftruncate(fd, 2 * MIB), 0);
	assert_int_equal(direct_read(&dr, buf, 4 * MIB, 0), -ENODATA);
	direct_read_close(&dr);
	direct_read_close(&dr); /* twice: harmless */
out:
	close(fd);
	free(want);
	free(buf);
}

static void test_small_file_refused(void **state)
{
	struct fixture *f = *state;
	uint8_t *want = file_bytes(64 * KIB);
	struct direct_reader dr;
	char why[160] = "";
	int fd = make_file(f, "small", want, 64 * KIB);

	assert_int_equal(direct_read_open(&dr, fd, 64 * KIB, MIB, why, sizeof(why)), -E2BIG);
	assert_non_null(strstr(why, "64 KiB, under 1024 KiB"));
	assert_int_equal(dr.fd, -1);
	direct_read_close(&dr);
	close(fd);
	free(want);
}

static void test_tmpfs_refused(void **state)
{
	char dir[] = "/dev/shm/test-direct-read-XXXXXX", path[64], why[160] = "";
	struct direct_reader dr;
	struct statfs sfs;
	int fd;

	(void)state;
	if (statfs("/dev/shm", &sfs) || !mkdtemp(dir)) {
		skip();
		return;
	}
	snprintf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 8 * MIB), 0);
	/* tmpfs takes O_DIRECT from Linux 6.6 on, refuses it before: never direct */
	assert_int_not_equal(direct_read_open(&dr, fd, 8 * MIB, 0, why, sizeof(why)), 0);
	assert_true(strstr(why, "tmpfs") || strstr(why, "O_DIRECT"));
	direct_read_close(&dr);
	close(fd);
	unlink(path);
	rmdir(dir);
}

/* ---- through bo_stream ------------------------------------------------------------ */

static bool dir_reads_direct(struct fixture *f)
{
	struct statfs sfs;

	return !fstatfs(f->dir_fd, &sfs) && sfs.f_type != TMPFS_MAGIC && sfs.f_type != RAMFS_MAGIC;
}

static void flip_byte(struct fixture *f, const char *name, uint64_t off)
{
	int fd = openat(f->dir_fd, name, O_RDWR | O_CLOEXEC);
	uint8_t b;

	assert_true(fd >= 0);
	assert_int_equal(pread_full(fd, &b, 1, off), 0);
	b ^= 0x40;
	assert_int_equal(pwrite_full(fd, &b, 1, off), 0);
	close(fd);
}

static void test_restore_modes(void **state)
{
	static const uint64_t sizes[] = {3 * MIB + 8192, 0, 2 * MIB + 12345};
	struct fixture *f = *state;
	struct bo_stream_config cfg = {.chunk_size = 1 << 20, .image_id = 5};
	bool direct = dir_reads_direct(f);
	struct bo_set s;
	char err[256] = "";

	set_build(&s, 2, sizes, 3);
	assert_int_equal(run_dump(f, &s, &cfg, &bo_copy_engine_cpu, err, sizeof(err)), 0);
	/* DIRECT: every GPU's file read so where the file system allows */
	cfg.read_mode = BO_READ_DIRECT;
	assert_int_equal(run_restore(f, &s, &cfg, &bo_copy_engine_cpu, err, sizeof(err)), 0);
	assert_restored(&s);
	if (direct) {
		/* a host without io_uring (seccomp, sysctl) reads buffered, saying so */
		if (!s.gpus[0].direct_read)
			print_message("# not direct: %s\n", s.gpus[0].read_note);
		else
			assert_true(s.gpus[1].direct_read);
	} else {
		assert_false(s.gpus[0].direct_read);
		assert_non_null(strstr(s.gpus[0].read_note, "tmpfs"));
	}
	/* AUTO: buffered under the minimum, direct from it (where the file system allows) */
	cfg.read_mode = BO_READ_AUTO;
	assert_int_equal(run_restore(f, &s, &cfg, &bo_copy_engine_cpu, err, sizeof(err)), 0);
	assert_restored(&s);
	assert_false(s.gpus[1].direct_read);
	assert_non_null(strstr(s.gpus[1].read_note, "KiB: the page cache is quicker"));
	cfg.direct_min = 4096;
	assert_int_equal(run_restore(f, &s, &cfg, &bo_copy_engine_cpu, err, sizeof(err)), 0);
	assert_restored(&s);
	if (!direct)
		assert_false(s.gpus[1].direct_read);
	else if (!s.gpus[1].direct_read)
		print_message("# not direct: %s\n", s.gpus[1].read_note);
	cfg.direct_min = 0;
	cfg.read_mode = BO_READ_BUFFERED;
	assert_int_equal(run_restore(f, &s, &cfg, &bo_copy_engine_cpu, err, sizeof(err)), 0);
	assert_string_equal(s.gpus[1].read_note, "buffered reads asked");
	/* a damaged byte read with O_DIRECT is still found by the checksum */
	flip_byte(f, "amdgpu-bo-5-4097.img", 2 * MIB + 777);
	cfg.read_mode = BO_READ_DIRECT;
	assert_int_equal(run_restore(f, &s, &cfg, &bo_copy_engine_cpu, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "gpu 4097: BO 0 offset 0x200000: checksum mismatch"));
	set_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bytes_come_back, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test_setup_teardown(test_small_file_refused, bo_fixture_setup,
						bo_fixture_teardown),
		cmocka_unit_test(test_tmpfs_refused),
		cmocka_unit_test_setup_teardown(test_restore_modes, bo_fixture_setup,
						bo_fixture_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
