// SPDX-License-Identifier: MIT
/* O_DIRECT reads with io_uring (see direct_read.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <liburing.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include "common/fullio.h"
#include "datapath/direct_read.h"

/* One request in flight: where its bytes go and come from. */
struct segment {
	uint8_t *buf;
	uint64_t off;
	uint32_t len;
	bool busy;
};

/* The requests of one direct_read() call. */
struct batch {
	struct direct_reader *dr;
	struct segment seg[DIRECT_READ_DEPTH];
	uint32_t in_flight;
	int err; /* first error; no new request once set */
};

static int why_set(char *why, size_t whylen, int err, const char *what)
{
	snprintf(why, whylen, "%s", what);
	return err;
}

/* io_uring hands direct reads of such files to its worker threads: no gain, more CPU. */
bool direct_io_in_memory(int fd)
{
	struct statfs sfs;

	return !fstatfs(fd, &sfs) && (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC);
}

int direct_read_open(struct direct_reader *dr, int fd, uint64_t size, uint64_t min_bytes, char *why,
		     size_t whylen)
{
	char path[64], msg[160];
	int ret;

	*dr = (struct direct_reader){.fd = -1, .buffered_fd = fd, .size = size};
	if (size < min_bytes) {
		snprintf(msg, sizeof(msg),
			 "%" PRIu64 " KiB, under %" PRIu64
			 " KiB: the page cache is quicker for small files",
			 size >> 10, min_bytes >> 10);
		return why_set(why, whylen, -E2BIG, msg);
	}
	if (direct_io_in_memory(fd))
		return why_set(why, whylen, -EOPNOTSUPP,
			       "the file is in memory (tmpfs): no device to wait for");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	dr->fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (dr->fd < 0) {
		ret = -errno;
		snprintf(msg, sizeof(msg), "the file system refuses O_DIRECT (%s)", strerror(-ret));
		return why_set(why, whylen, ret, msg);
	}
	dr->ring = calloc(1, sizeof(*dr->ring));
	ret = dr->ring ? io_uring_queue_init(DIRECT_READ_DEPTH, dr->ring, 0) : -ENOMEM;
	if (ret) {
		free(dr->ring);
		dr->ring = NULL;
		close(dr->fd);
		dr->fd = -1;
		snprintf(msg, sizeof(msg), "no io_uring here (%s)", strerror(-ret));
		return why_set(why, whylen, ret, msg);
	}
	return 0;
}

void direct_read_close(struct direct_reader *dr)
{
	if (dr->ring) {
		io_uring_queue_exit(dr->ring);
		free(dr->ring);
		dr->ring = NULL;
	}
	if (dr->fd >= 0)
		close(dr->fd);
	dr->fd = -1;
}

/* Queues segment i (its fields set); the next submit sends it. */
static void queue_segment(struct batch *b, uint32_t i)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(b->dr->ring);
	struct segment *s = &b->seg[i];

	/* never NULL: at most DIRECT_READ_DEPTH requests exist, the SQ has as many entries */
	io_uring_prep_read(sqe, b->dr->fd, s->buf, s->len, s->off);
	io_uring_sqe_set_data64(sqe, i);
	s->busy = true;
	b->in_flight++;
	b->dr->requests++;
	if (b->in_flight > b->dr->max_in_flight)
		b->dr->max_in_flight = b->in_flight;
}

/* A completion: done, continued (short read, EAGAIN), or the batch's error. */
static void complete(struct batch *b, uint64_t i, int res)
{
	struct segment *s = &b->seg[i];

	s->busy = false;
	b->in_flight--;
	if (res == -EAGAIN || res == -EINTR) {
		if (!b->err)
			queue_segment(b, (uint32_t)i);
		return;
	}
	if (res < 0 || (res == 0 && s->len)) {
		/* 0 bytes: the file ends before the size it had at open */
		if (!b->err)
			b->err = res < 0 ? res : -ENODATA;
		return;
	}
	if ((uint32_t)res < s->len && !b->err) {
		s->buf += res;
		s->off += (uint32_t)res;
		s->len -= (uint32_t)res;
		queue_segment(b, (uint32_t)i);
	}
}

/* Submits what is queued, waits for one completion, takes all there are. */
static int submit_and_reap(struct batch *b)
{
	struct io_uring_cqe *cqe;
	unsigned int head, seen = 0;
	int ret;

	ret = io_uring_submit_and_wait(b->dr->ring, 1);
	if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
		return ret;
	io_uring_for_each_cqe(b->dr->ring, head, cqe)
	{
		complete(b, io_uring_cqe_get_data64(cqe), cqe->res);
		seen++;
	}
	io_uring_cq_advance(b->dr->ring, seen);
	return 0;
}

/*
 * After a failed submission: the requests the kernel has must complete
 * before their buffers are reused. Waits up to DRAIN_WAITS seconds for
 * them; the reader is not used again either way (the caller falls back).
 */
#define DRAIN_WAITS 10
static void drain(struct batch *b)
{
	struct __kernel_timespec ts = {.tv_sec = 1};
	struct io_uring_cqe *cqe;
	int waits = 0;

	while (b->in_flight && waits < DRAIN_WAITS) {
		if (io_uring_wait_cqe_timeout(b->dr->ring, &cqe, &ts)) {
			waits++;
			continue;
		}
		complete(b, io_uring_cqe_get_data64(cqe), cqe->res);
		io_uring_cqe_seen(b->dr->ring, cqe);
	}
}

static uint32_t free_segment(const struct batch *b)
{
	uint32_t i;

	for (i = 0; i < DIRECT_READ_DEPTH && b->seg[i].busy; i++)
		;
	return i;
}

/* The aligned run [0, len) of buf at off, DIRECT_READ_DEPTH requests at a time. */
static int read_run(struct direct_reader *dr, uint8_t *buf, size_t len, uint64_t off)
{
	struct batch b = {.dr = dr};
	size_t next = 0;
	uint32_t i, n;
	int ret;

	while (next < len || b.in_flight) {
		while (!b.err && next < len && b.in_flight < DIRECT_READ_DEPTH) {
			i = free_segment(&b);
			n = len - next < DIRECT_READ_SEGMENT ? (uint32_t)(len - next)
							     : DIRECT_READ_SEGMENT;
			b.seg[i] = (struct segment){.buf = buf + next, .off = off + next, .len = n};
			queue_segment(&b, i);
			next += n;
		}
		if (b.err && !b.in_flight)
			break;
		ret = submit_and_reap(&b);
		if (ret) {
			b.err = b.err ?: ret;
			drain(&b);
			break;
		}
	}
	return b.err;
}

int direct_read(struct direct_reader *dr, void *buf, size_t len, uint64_t off)
{
	uint64_t avail = off < dr->size ? dr->size - off : 0;
	size_t direct = 0;
	int ret;

	if (dr->fd >= 0 && !(off % DIRECT_READ_ALIGN) && !((uintptr_t)buf % DIRECT_READ_ALIGN)) {
		direct = avail < len ? (size_t)avail : len;
		direct -= direct % DIRECT_READ_ALIGN;
	}
	if (direct) {
		ret = read_run(dr, buf, direct, off);
		if (ret)
			return ret;
	}
	if (direct == len)
		return 0;
	return pread_full(dr->buffered_fd, (uint8_t *)buf + direct, len - direct, off + direct);
}
