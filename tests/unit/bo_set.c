// SPDX-License-Identifier: MIT
/* The BO streaming unit tests' fixture and BO sets (see bo_set.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bo_set.h"
#include "fd_compare.h"

/* ---- fixture ------------------------------------------------------------------------ */

int bo_fixture_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s", "/tmp/test-bo-stream-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	f->dir_fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*state = f;
	return f->dir_fd < 0 ? -1 : 0;
}

static void empty_dir(struct fixture *f)
{
	DIR *d = fdopendir(dup(f->dir_fd));
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(f->dir_fd, e->d_name, 0);
	closedir(d);
}

int bo_fixture_teardown(void **state)
{
	struct fixture *f = *state;

	empty_dir(f);
	close(f->dir_fd);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* ---- BOs ------------------------------------------------------------------------------ */

int make_memfd(uint64_t size)
{
	int fd = memfd_create("bo", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	return fd;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

void fill_random(int fd, uint64_t size, uint64_t seed)
{
	uint64_t buf[8192], off = 0, s = seed | 1;
	size_t i, n;

	while (off < size) {
		for (i = 0; i < 8192; i++)
			buf[i] = xorshift(&s);
		n = size - off < sizeof(buf) ? (size_t)(size - off) : sizeof(buf);
		assert_int_equal(pwrite(fd, buf, n, (off_t)off), (ssize_t)n);
		off += n;
	}
}

static void assert_closed(int fd)
{
	errno = 0;
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	assert_int_equal(errno, EBADF);
}

/* gpu g gets ids 0x1000 + g; BO sizes from sizes[] (0 ends the list, use ~0 for 0). */
void set_build(struct bo_set *s, uint32_t gpu_count, const uint64_t *sizes, uint32_t bo_count)
{
	uint32_t g, b;

	memset(s, 0, sizeof(*s));
	s->gpu_count = gpu_count;
	for (g = 0; g < gpu_count; g++) {
		s->gpus[g].gpu_id = 0x1000 + g;
		s->gpus[g].bo_count = bo_count;
		s->gpus[g].bos = s->bos[g];
		for (b = 0; b < bo_count; b++) {
			s->bos[g][b].size = sizes[b] + g * 4096;
			s->src[g][b] = make_memfd(s->bos[g][b].size);
			s->dst[g][b] = make_memfd(s->bos[g][b].size);
			fill_random(s->src[g][b], s->bos[g][b].size, (g + 1) * 1000 + b);
		}
	}
}

void set_free(struct bo_set *s)
{
	uint32_t g, b;

	for (g = 0; g < s->gpu_count; g++)
		for (b = 0; b < s->gpus[g].bo_count; b++) {
			close(s->src[g][b]);
			close(s->dst[g][b]);
		}
}

/* Hands dups of the src (dump) or dst (restore) memfds to the stream. */
static void set_give(struct bo_set *s, bool to_restore, const struct bo_copy_engine *engine)
{
	uint32_t g, b;

	for (g = 0; g < s->gpu_count; g++) {
		s->gpus[g].engine = engine;
		for (b = 0; b < s->gpus[g].bo_count; b++) {
			s->given[g][b] = dup(to_restore ? s->dst[g][b] : s->src[g][b]);
			assert_true(s->given[g][b] >= 0);
			s->bos[g][b].dmabuf_fd = s->given[g][b];
		}
	}
}

static void assert_all_given_closed(const struct bo_set *s)
{
	uint32_t g, b;

	for (g = 0; g < s->gpu_count; g++)
		for (b = 0; b < s->gpus[g].bo_count; b++) {
			assert_int_equal(s->bos[g][b].dmabuf_fd, -1);
			assert_closed(s->given[g][b]);
		}
}

void assert_restored(const struct bo_set *s)
{
	uint32_t g, b;

	for (g = 0; g < s->gpu_count; g++)
		for (b = 0; b < s->gpus[g].bo_count; b++)
			assert_same_bytes(s->src[g][b], s->dst[g][b], s->bos[g][b].size);
}

/* A dump or restore of the set with dups of its memfds; every one closed after. */
static int run_set(struct fixture *f, struct bo_set *s, const struct bo_stream_config *base,
		   const struct bo_copy_engine *engine, bool restore, char *err, size_t errlen)
{
	struct bo_stream_config cfg = *base;
	int ret;

	cfg.dir_fd = f->dir_fd;
	set_give(s, restore, engine);
	ret = restore ? bo_stream_restore(&cfg, s->gpus, s->gpu_count, err, errlen)
		      : bo_stream_dump(&cfg, s->gpus, s->gpu_count, err, errlen);
	assert_all_given_closed(s);
	return ret;
}

int run_dump(struct fixture *f, struct bo_set *s, const struct bo_stream_config *base,
	     const struct bo_copy_engine *engine, char *err, size_t errlen)
{
	return run_set(f, s, base, engine, false, err, errlen);
}

int run_restore(struct fixture *f, struct bo_set *s, const struct bo_stream_config *base,
		const struct bo_copy_engine *engine, char *err, size_t errlen)
{
	return run_set(f, s, base, engine, true, err, errlen);
}

bool file_exists(struct fixture *f, const char *name)
{
	struct stat st;

	return !fstatat(f->dir_fd, name, &st, AT_SYMLINK_NOFOLLOW);
}

void assert_no_files(struct fixture *f)
{
	DIR *d = fdopendir(dup(f->dir_fd));
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			fail_msg("left behind: %s", e->d_name);
	closedir(d);
}

const uint64_t mixed_sizes[MIXED_COUNT] = {64 * KIB,	0,   4096, 3 * 64 * KIB + 4096,
					   MIB + 12345, 8192};
const struct bo_stream_config small_chunks = {.chunk_size = 64 * KIB, .ring_depth = 3};
