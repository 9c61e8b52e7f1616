// SPDX-License-Identifier: MIT
/*
 * bo_stream_dump() / bo_stream_restore() with streamed images
 * (bo_stream_config.stream_open, datapath/bo_seq.h), against a stand-in for
 * criu-image-streamer that behaves as it does: a dump's images arrive
 * through pipes, several at once, and are kept in memory; a restore gets
 * each image once, whole, through a pipe, and the next one only after the
 * one before was read to its end. Checks: byte-exact round trips over
 * several GPUs and BOs (all-zero chunks as records without bytes), nothing
 * written to the image directory, each GPU's stream opened once; a damaged
 * byte, a cut stream, a stream of other BOs refused in one line before the
 * damage reaches a BO; incremental dumps refused; a streamer gone mid-dump
 * is an error, not a hang.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bo_set.h"
#include "fd_compare.h"
#include "common/fullio.h"
#include "datapath/bo_stream.h"

#define MAX_IMAGES 8

/* One image the stand-in holds. */
struct image {
	char name[64];
	uint8_t *bytes;
	size_t len;
	int served; /* times a restore opened it */
	int pipe_fd;
	pthread_t thread;
	bool running;
};

struct streamer {
	struct image img[MAX_IMAGES];
	int count;
	int open_while_busy; /* restore: opens before the last image was read whole */
	size_t cut_after;    /* dump: close the pipe after this many bytes (0: never) */
};

/* Capture: everything that comes through the pipe, to its end. */
static void *capture_main(void *arg)
{
	struct image *im = arg;
	size_t cap = 0;
	ssize_t n;

	for (;;) {
		if (cap - im->len < 65536) {
			cap = cap ? cap * 2 : 1 << 20;
			im->bytes = realloc(im->bytes, cap);
			assert_non_null(im->bytes);
		}
		n = read(im->pipe_fd, im->bytes + im->len, cap - im->len);
		if (n <= 0)
			break;
		im->len += (size_t)n;
	}
	close(im->pipe_fd);
	return NULL;
}

/* Capture that stops reading after cut_after bytes: a streamer gone. */
static void *cut_main(void *arg)
{
	struct image *im = arg;
	uint8_t buf[4096];
	size_t left = im->len;

	while (left) {
		ssize_t n = read(im->pipe_fd, buf, left < sizeof(buf) ? left : sizeof(buf));

		if (n <= 0)
			break;
		left -= (size_t)n;
	}
	close(im->pipe_fd);
	im->len = 0;
	return NULL;
}

/* Serve: the whole image into the pipe, then its end. */
static void *serve_main(void *arg)
{
	struct image *im = arg;

	write_full(im->pipe_fd, im->bytes, im->len); /* EPIPE if the reader gave up */
	close(im->pipe_fd);
	return NULL;
}

/* The last image served is read whole: its thread ends within seconds. */
static bool finish_serving(struct streamer *st)
{
	struct timespec until;
	bool all = true;

	for (int i = 0; i < st->count; i++) {
		if (!st->img[i].running)
			continue;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 10;
		if (pthread_timedjoin_np(st->img[i].thread, NULL, &until)) {
			all = false; /* still blocked in its pipe: joined once the reader is gone */
			continue;
		}
		st->img[i].running = false;
	}
	return all;
}

static struct image *find(struct streamer *st, const char *name)
{
	for (int i = 0; i < st->count; i++)
		if (!strcmp(st->img[i].name, name))
			return &st->img[i];
	return NULL;
}

static int stream_open(void *arg, const char *name, enum bo_access access)
{
	struct streamer *st = arg;
	struct image *im = find(st, name);
	int p[2];

	if (access == BO_ACCESS_READ) {
		if (!finish_serving(st))
			st->open_while_busy++; /* the real one would block here */
		if (!im || im->served++)
			return -ENOENT;
	} else {
		assert_null(im);
		assert_true(st->count < MAX_IMAGES);
		im = &st->img[st->count++];
		snprintf(im->name, sizeof(im->name), "%s", name);
		im->len = st->cut_after;
	}
	/* far from the BOs' fds: a number the stream closed is not reused while
	 * the test checks it is closed */
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	for (int i = 0; i < 2; i++) {
		int high = fcntl(p[i], F_DUPFD_CLOEXEC, 512);

		assert_true(high >= 0);
		close(p[i]);
		p[i] = high;
	}
	im->pipe_fd = access == BO_ACCESS_READ ? p[1] : p[0];
	assert_int_equal(pthread_create(&im->thread, NULL,
					access == BO_ACCESS_WRITE
						? (st->cut_after ? cut_main : capture_main)
						: serve_main,
					im),
			 0);
	im->running = true;
	return access == BO_ACCESS_READ ? p[0] : p[1];
}

static void streamer_free(struct streamer *st)
{
	for (int i = 0; i < st->count; i++)
		if (st->img[i].running)
			pthread_join(st->img[i].thread, NULL); /* its reader is closed by now */
	for (int i = 0; i < st->count; i++)
		free(st->img[i].bytes);
	memset(st, 0, sizeof(*st));
}

static struct bo_stream_config streamed(struct streamer *st)
{
	struct bo_stream_config cfg = small_chunks;

	cfg.image_id = 7;
	cfg.stream_open = stream_open;
	cfg.stream_arg = st;
	return cfg;
}

/* The set's BO 3 of GPU 0 (196 KiB): its second 64 KiB chunk all zero. */
static void zero_a_chunk(struct bo_set *s)
{
	static const uint8_t zeros[64 * KIB];

	assert_int_equal(pwrite(s->src[0][3], zeros, sizeof(zeros), 64 * KIB),
			 (ssize_t)sizeof(zeros));
}

/* Dumps the set through a fresh stand-in; its images stay in *st. */
static void dump_set(struct fixture *f, struct bo_set *s, struct streamer *st)
{
	struct bo_stream_config cfg = streamed(st);
	char err[256] = "";

	memset(st, 0, sizeof(*st));
	assert_int_equal(run_dump(f, s, &cfg, NULL, err, sizeof(err)), 0);
	assert_true(finish_serving(st));
	for (int i = 0; i < st->count; i++)
		st->img[i].served = 0;
}

static uint64_t set_bytes(const struct bo_set *s, uint32_t g)
{
	uint64_t n = 0;

	for (uint32_t b = 0; b < s->gpus[g].bo_count; b++)
		n += s->bos[g][b].size;
	return n;
}

static void test_round_trip_through_pipes(void **state)
{
	struct fixture *f = *state;
	struct streamer st;
	struct bo_stream_config cfg;
	struct bo_set s;
	char err[256] = "", name[64];

	set_build(&s, 3, mixed_sizes, MIXED_COUNT);
	zero_a_chunk(&s);
	dump_set(f, &s, &st);
	assert_no_files(f); /* nothing on disk: every byte went through the stream */
	assert_int_equal(st.count, 3);
	for (uint32_t g = 0; g < 3; g++) {
		struct image *im;

		snprintf(name, sizeof(name), "amdgpu-bo-7-%u.seq", 0x1000 + g);
		im = find(&st, name);
		assert_non_null(im);
		/* header, a 32-byte head per chunk, the end: the zero chunk carries no bytes */
		if (!g)
			assert_true(im->len < set_bytes(&s, g));
		else
			assert_true(im->len > set_bytes(&s, g));
	}
	cfg = streamed(&st);
	assert_int_equal(run_restore(f, &s, &cfg, NULL, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_restored(&s);
	assert_int_equal(st.open_while_busy, 0); /* one GPU's stream after the other */
	for (int i = 0; i < st.count; i++)
		assert_int_equal(st.img[i].served, 1);
	assert_no_files(f);
	streamer_free(&st);
	set_free(&s);
}

/* Every dst memfd of GPU g is still all zero: nothing reached a BO. */
static void assert_untouched(const struct bo_set *s, uint32_t g)
{
	static uint8_t buf[64 * KIB];

	for (uint32_t b = 0; b < s->gpus[g].bo_count; b++)
		for (uint64_t off = 0; off < s->bos[g][b].size; off += sizeof(buf)) {
			size_t n = s->bos[g][b].size - off < sizeof(buf)
					   ? (size_t)(s->bos[g][b].size - off)
					   : sizeof(buf);

			assert_int_equal(pread_full(s->dst[g][b], buf, n, off), 0);
			for (size_t i = 0; i < n; i++)
				if (buf[i])
					fail_msg("GPU %u BO %u byte %llu written", g, b,
						 (unsigned long long)(off + i));
		}
}

static void test_damage_is_refused(void **state)
{
	struct fixture *f = *state;
	struct streamer st;
	struct bo_stream_config cfg;
	struct bo_set s;
	char err[256] = "";
	struct image *im;

	set_build(&s, 1, mixed_sizes, MIXED_COUNT);
	dump_set(f, &s, &st);
	im = find(&st, "amdgpu-bo-7-4096.seq");
	assert_non_null(im);
	/* header 40 + 6 x 24 + 4 bytes, then BO 0's chunk (head 32, 64 KiB): a byte of it */
	im->bytes[40 + 6 * 24 + 4 + 32 + 1000] ^= 0x20;
	cfg = streamed(&st);
	assert_int_equal(run_restore(f, &s, &cfg, NULL, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "gpu 4096: BO 0 offset 0x0: checksum mismatch in "
				    "amdgpu-bo-7-4096.seq"));
	assert_null(strchr(err, '\n'));
	assert_untouched(&s, 0);
	streamer_free(&st);
	set_free(&s);
}

static void test_cut_stream_is_refused(void **state)
{
	struct fixture *f = *state;
	struct streamer st;
	struct bo_stream_config cfg;
	struct bo_set s;
	char err[256] = "";
	struct image *im;

	set_build(&s, 1, mixed_sizes, MIXED_COUNT);
	dump_set(f, &s, &st);
	im = find(&st, "amdgpu-bo-7-4096.seq");
	im->len -= 100; /* the end record and part of the last chunk */
	cfg = streamed(&st);
	assert_int_equal(run_restore(f, &s, &cfg, NULL, err, sizeof(err)), -ENODATA);
	assert_non_null(strstr(err, "gpu 4096: amdgpu-bo-7-4096.seq: "));
	assert_non_null(strstr(err, "the stream ends inside it"));
	assert_null(strchr(err, '\n'));
	streamer_free(&st);
	set_free(&s);
}

static void test_other_bos_are_refused(void **state)
{
	struct fixture *f = *state;
	struct streamer st;
	struct bo_stream_config cfg;
	struct bo_set s;
	char err[256] = "";

	set_build(&s, 2, mixed_sizes, MIXED_COUNT);
	dump_set(f, &s, &st);
	s.bos[1][4].size -= 4096; /* the checkpoint's metadata says otherwise */
	cfg = streamed(&st);
	assert_int_equal(run_restore(f, &s, &cfg, NULL, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "gpu 4097: amdgpu-bo-7-4097.seq: BO 4 holds 1065017 bytes, "
				 "the checkpoint says 1060921");
	s.bos[1][4].size += 4096;
	assert_untouched(&s, 1);
	streamer_free(&st);
	/* an image the stream does not hold */
	cfg = streamed(&st);
	assert_int_equal(run_restore(f, &s, &cfg, NULL, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "gpu 4096: amdgpu-bo-7-4096.seq: the image stream did not open it "
				 "(the stream has no such image)");
	streamer_free(&st);
	set_free(&s);
}

static void test_incremental_is_refused(void **state)
{
	struct fixture *f = *state;
	struct streamer st = {0};
	struct bo_stream_config cfg = streamed(&st);
	struct bo_set s;
	char err[256] = "";

	set_build(&s, 1, mixed_sizes, MIXED_COUNT);
	cfg.has_parent = true;
	cfg.parent_dir_fd = f->dir_fd;
	assert_int_equal(run_dump(f, &s, &cfg, NULL, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "an incremental dump (a parent image) is not streamed"));
	assert_int_equal(st.count, 0);
	set_free(&s);
}

static void test_streamer_gone(void **state)
{
	struct fixture *f = *state;
	struct streamer st = {.cut_after = 100000};
	struct bo_stream_config cfg = streamed(&st);
	struct bo_set s;
	char err[256] = "";

	set_build(&s, 2, mixed_sizes, MIXED_COUNT);
	assert_int_equal(run_dump(f, &s, &cfg, NULL, err, sizeof(err)), -EPIPE);
	assert_non_null(strstr(err, ".seq: BO stream of GPU 0x"));
	assert_null(strchr(err, '\n'));
	assert_no_files(f);
	streamer_free(&st);
	set_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_through_pipes),
		cmocka_unit_test(test_damage_is_refused),
		cmocka_unit_test(test_cut_stream_is_refused),
		cmocka_unit_test(test_other_bos_are_refused),
		cmocka_unit_test(test_incremental_is_refused),
		cmocka_unit_test(test_streamer_gone),
	};

	signal(SIGPIPE, SIG_IGN); /* as CRIU does: a pipe whose reader is gone is EPIPE */
	return cmocka_run_group_tests(tests, bo_fixture_setup, bo_fixture_teardown);
}
