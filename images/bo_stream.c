// SPDX-License-Identifier: MIT
/*
 * BO contents <-> image files through a bounded staging pipeline (see
 * bo_stream.h for the contract and the file format).
 *
 * Per GPU, a producer thread fills staging slots and a consumer thread drains
 * them, so reading and writing overlap:
 *   dump:    producer = copy engine read + CRC,   consumer = pwrite to .img
 *            (zero pages skipped: holes)
 *   restore: producer = pread from .img + verify, consumer = copy engine write
 *            (a chunk that is a hole: no read, a shared zero chunk is written)
 * A chunk of zeros costs no CRC pass either way (its checksum is known).
 * The BO side is used by one thread only (producer on dump, consumer on
 * restore), which also closes each BO's fd once it is done with it. Whatever
 * is left open is closed by the caller's thread after all threads are joined.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/errmsg.h"
#include "images/bo_stream.h"

#define INDEX_MAGIC	  "AMDBOIX1"
#define INDEX_VERSION	  1u
#define INDEX_HEADER_SIZE 64u
#define INDEX_BO_SIZE	  16u
#define INDEX_CRC_SIZE	  4u
#define FILE_PAGE	  4096u
#define ERR_LEN		  256

enum stream_dir { STREAM_DUMP, STREAM_RESTORE };

struct staging_slot {
	uint8_t *buf;
	uint32_t len;
	uint32_t bo_index;
	uint64_t bo_off;
	uint64_t file_off;
	uint64_t chunk_index;
	bool zero; /* all bytes zero (dump: nothing to write) */
};

/* Single-producer single-consumer ring; `error` stops both sides. */
struct staging_ring {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct staging_slot *slots;
	uint32_t depth;
	uint64_t filled;  /* slots handed to the consumer so far */
	uint64_t drained; /* slots the consumer gave back so far */
	bool producer_done;
	int error; /* first error of the GPU, 0 if none */
	char msg[ERR_LEN];
};

/* The BO currently open on the BO side of a GPU's pipeline. */
struct open_bo {
	uint32_t index;
	void *handle; /* NULL: none open */
};

struct gpu_job {
	const struct bo_stream_config *cfg;
	struct bo_stream_gpu *gpu;
	const struct bo_copy_engine *engine;
	enum stream_dir dir;
	uint32_t chunk_size;
	uint64_t data_bytes;
	uint64_t chunk_count;
	uint32_t *crcs;	   /* chunk_count checksums */
	uint32_t zero_crc; /* of chunk_size zero bytes, once zero_crc_known */
	bool zero_crc_known;
	/* restore: a chunk of zeros for holes (calloc'd, never written: its
	 * pages stay the kernel's zero page), NULL until the first hole */
	uint8_t *zeros;
	int data_fd;
	int index_fd;
	/* dump: this call created the file (a name that existed is not ours to remove) */
	bool created_data, created_index;
	struct open_bo cur;
	uint64_t done_bytes;
	uint64_t next_progress;
	struct staging_ring ring;
	pthread_t producer, consumer;
	bool producer_running, consumer_running;
};

/* ---- errors ----------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) static int job_fail(struct gpu_job *job, int err,
							  const char *fmt, ...)
{
	struct staging_ring *r = &job->ring;
	va_list ap;

	pthread_mutex_lock(&r->lock);
	if (!r->error) {
		r->error = err;
		va_start(ap, fmt);
		vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
		va_end(ap);
	}
	pthread_cond_broadcast(&r->changed);
	pthread_mutex_unlock(&r->lock);
	return err;
}

/* job_fail() for a failed system call: errno, its text after the message. */
static int job_fail_errno(struct gpu_job *job, const char *what, const char *name)
{
	int e = errno;

	return job_fail(job, -e, "gpu %" PRIu32 ": %s%s%s: %s", job->gpu->gpu_id, what,
			*what ? " " : "", name, strerror(e));
}

static int job_error(struct gpu_job *job)
{
	int err;

	pthread_mutex_lock(&job->ring.lock);
	err = job->ring.error;
	pthread_mutex_unlock(&job->ring.lock);
	return err;
}

/* ---- checksums ---------------------------------------------------------------------- */

/* zlib's CRC-32 (the same polynomial as gzip and PNG), one per chunk. */
static uint32_t checksum(const void *buf, size_t len)
{
	return (uint32_t)crc32_z(crc32_z(0, NULL, 0), buf, len);
}

static const uint8_t zero_page[FILE_PAGE];

static bool is_zero(const uint8_t *p, size_t len)
{
	size_t n;

	for (; len; p += n, len -= n) {
		n = len < FILE_PAGE ? len : FILE_PAGE;
		if (memcmp(p, zero_page, n))
			return false;
	}
	return true;
}

/* The checksum of `len` zero bytes, without a buffer of that size (a full
 * chunk's is computed once per GPU): zero chunks cost no CRC pass. */
static uint32_t zero_checksum(struct gpu_job *job, uint32_t len)
{
	uLong crc = crc32_z(0, NULL, 0);
	uint32_t n, left;

	if (len == job->chunk_size && job->zero_crc_known)
		return job->zero_crc;
	for (left = len; left; left -= n) {
		n = left < FILE_PAGE ? left : FILE_PAGE;
		crc = crc32_z(crc, zero_page, n);
	}
	if (len == job->chunk_size) {
		job->zero_crc = (uint32_t)crc;
		job->zero_crc_known = true;
	}
	return (uint32_t)crc;
}

/* ---- staging ring --------------------------------------------------------------------- */

static int ring_init(struct staging_ring *r)
{
	memset(r, 0, sizeof(*r));
	if (pthread_mutex_init(&r->lock, NULL))
		return -ENOMEM;
	if (pthread_cond_init(&r->changed, NULL)) {
		pthread_mutex_destroy(&r->lock);
		return -ENOMEM;
	}
	return 0;
}

static int ring_alloc(struct staging_ring *r, uint32_t depth, uint32_t chunk_size)
{
	uint32_t i;

	r->slots = calloc(depth, sizeof(*r->slots));
	if (!r->slots)
		return -ENOMEM;
	r->depth = depth;
	for (i = 0; i < depth; i++)
		if (posix_memalign((void **)&r->slots[i].buf, FILE_PAGE, chunk_size))
			return -ENOMEM;
	return 0;
}

/* Also after a failed ring_alloc(), which leaves the slots it did not fill NULL. */
static void ring_destroy(struct staging_ring *r)
{
	uint32_t i;

	for (i = 0; r->slots && i < r->depth; i++)
		free(r->slots[i].buf);
	free(r->slots);
	r->slots = NULL;
	pthread_cond_destroy(&r->changed);
	pthread_mutex_destroy(&r->lock);
}

/* Producer: the next empty slot, NULL once the ring has failed. */
static struct staging_slot *ring_claim(struct staging_ring *r)
{
	struct staging_slot *s = NULL;

	pthread_mutex_lock(&r->lock);
	while (!r->error && r->filled - r->drained == r->depth)
		pthread_cond_wait(&r->changed, &r->lock);
	if (!r->error)
		s = &r->slots[r->filled % r->depth];
	pthread_mutex_unlock(&r->lock);
	return s;
}

static void ring_publish(struct staging_ring *r)
{
	pthread_mutex_lock(&r->lock);
	r->filled++;
	pthread_cond_broadcast(&r->changed);
	pthread_mutex_unlock(&r->lock);
}

static void ring_finish(struct staging_ring *r)
{
	pthread_mutex_lock(&r->lock);
	r->producer_done = true;
	pthread_cond_broadcast(&r->changed);
	pthread_mutex_unlock(&r->lock);
}

/* Consumer: the next full slot, NULL at the end or once the ring has failed. */
static struct staging_slot *ring_take(struct staging_ring *r)
{
	struct staging_slot *s = NULL;

	pthread_mutex_lock(&r->lock);
	while (!r->error && r->filled == r->drained && !r->producer_done)
		pthread_cond_wait(&r->changed, &r->lock);
	if (!r->error && r->filled != r->drained)
		s = &r->slots[r->drained % r->depth];
	pthread_mutex_unlock(&r->lock);
	return s;
}

static void ring_release(struct staging_ring *r)
{
	pthread_mutex_lock(&r->lock);
	r->drained++;
	pthread_cond_broadcast(&r->changed);
	pthread_mutex_unlock(&r->lock);
}

/* ---- the BO side ----------------------------------------------------------------------- */

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void bo_close(struct gpu_job *job)
{
	if (job->cur.handle) {
		job->engine->ops->close_bo(job->cur.handle);
		close_fd(&job->gpu->bos[job->cur.index].dmabuf_fd);
	}
	job->cur.handle = NULL;
}

/* Makes BO `index` the open one (closing the previous one and its fd). */
static int bo_switch(struct gpu_job *job, uint32_t index)
{
	struct bo_stream_bo *bo = &job->gpu->bos[index];
	enum bo_access access = job->dir == STREAM_DUMP ? BO_ACCESS_READ : BO_ACCESS_WRITE;
	int ret;

	if (job->cur.handle && job->cur.index == index)
		return 0;
	bo_close(job);
	if (bo->dmabuf_fd < 0)
		return job_fail(job, -EBADF, "gpu %" PRIu32 ": BO %" PRIu32 " has no dma-buf fd",
				job->gpu->gpu_id, index);
	ret = job->engine->ops->open_bo(job->engine, bo->dmabuf_fd, bo->size, access,
					&job->cur.handle);
	if (ret) {
		job->cur.handle = NULL;
		return job_fail(job, ret, "gpu %" PRIu32 ": BO %" PRIu32 ": copy engine open: %s",
				job->gpu->gpu_id, index, strerror(-ret));
	}
	job->cur.index = index;
	return 0;
}

/* ---- files --------------------------------------------------------------------------- */

static void image_name(char *buf, size_t len, const struct gpu_job *job, const char *ext)
{
	snprintf(buf, len, "amdgpu-bo-%" PRIu32 "-%" PRIu32 ".%s", job->cfg->image_id,
		 job->gpu->gpu_id, ext);
}

static int pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = pwrite(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* -ENODATA if the file ends before len bytes. */
static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = pread(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENODATA;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* ---- chunk layout ----------------------------------------------------------------------- */

static uint64_t chunks_of(uint64_t size, uint32_t chunk_size)
{
	return size / chunk_size + (size % chunk_size != 0);
}

/* Sums the BO sizes and chunk counts; -EOVERFLOW on absurd sizes. */
static int job_layout(struct gpu_job *job)
{
	const struct bo_stream_gpu *g = job->gpu;
	uint64_t bytes = 0, chunks = 0;
	uint32_t i;

	for (i = 0; i < g->bo_count; i++) {
		if (g->bos[i].size > INT64_MAX - bytes)
			return job_fail(job, -EOVERFLOW, "gpu %" PRIu32 ": BO sizes overflow",
					g->gpu_id);
		bytes += g->bos[i].size;
		chunks += chunks_of(g->bos[i].size, job->chunk_size);
	}
	if (chunks > SIZE_MAX / INDEX_CRC_SIZE - g->bo_count - INDEX_HEADER_SIZE)
		return job_fail(job, -EOVERFLOW, "gpu %" PRIu32 ": too many chunks", g->gpu_id);
	job->data_bytes = bytes;
	job->chunk_count = chunks;
	return 0;
}

static size_t index_size(const struct gpu_job *job)
{
	return INDEX_HEADER_SIZE + (size_t)job->gpu->bo_count * INDEX_BO_SIZE +
	       (size_t)job->chunk_count * INDEX_CRC_SIZE + INDEX_CRC_SIZE;
}

/* Walks the chunks in file order: fills the position fields of the next slot. */
struct chunk_cursor {
	uint32_t bo_index;
	uint64_t bo_off;
	uint64_t file_off;
	uint64_t chunk_index;
};

static bool cursor_next(const struct gpu_job *job, struct chunk_cursor *c, struct staging_slot *s)
{
	const struct bo_stream_gpu *g = job->gpu;
	uint64_t left;

	while (c->bo_index < g->bo_count && c->bo_off == g->bos[c->bo_index].size) {
		c->bo_index++;
		c->bo_off = 0;
	}
	if (c->bo_index == g->bo_count)
		return false;
	left = g->bos[c->bo_index].size - c->bo_off;
	s->len = left < job->chunk_size ? (uint32_t)left : job->chunk_size;
	s->bo_index = c->bo_index;
	s->bo_off = c->bo_off;
	s->file_off = c->file_off;
	s->chunk_index = c->chunk_index;
	c->bo_off += s->len;
	c->file_off += s->len;
	c->chunk_index++;
	return true;
}

/* ---- pipeline stages -------------------------------------------------------------------- */

static int dump_fill(struct gpu_job *job, struct staging_slot *s)
{
	int ret = bo_switch(job, s->bo_index);

	if (ret)
		return ret;
	ret = job->engine->ops->read(job->cur.handle, s->bo_off, s->buf, s->len);
	if (ret)
		return job_fail(job, ret,
				"gpu %" PRIu32 ": BO %" PRIu32 " offset 0x%" PRIx64
				": copy engine read: %s",
				job->gpu->gpu_id, s->bo_index, s->bo_off, strerror(-ret));
	/* the zero test stops at the first non-zero byte: cheap for data */
	s->zero = is_zero(s->buf, s->len);
	job->crcs[s->chunk_index] = s->zero ? zero_checksum(job, s->len) : checksum(s->buf, s->len);
	return 0;
}

/* Length of the run of blocks (pages of the chunk, the last one maybe shorter)
 * from `off` on that are all zero (want_zero) or all not. */
static size_t block_run(const struct staging_slot *s, size_t off, bool want_zero)
{
	size_t start = off, n;

	while (off < s->len) {
		n = s->len - off < FILE_PAGE ? s->len - off : FILE_PAGE;
		if (!memcmp(s->buf + off, zero_page, n) != want_zero)
			break;
		off += n;
	}
	return off - start;
}

/*
 * Writes the chunk's non-zero pages only: the data file was sized up front,
 * so the zero pages stay holes, which read back as zeros (VRAM is often
 * mostly zero; the image then costs what was written, not the BO size).
 */
static int dump_drain(struct gpu_job *job, struct staging_slot *s)
{
	size_t off = 0, len;
	char name[64];
	int ret = 0;

	if (s->zero)
		return 0;
	while (!ret && off < s->len) {
		off += block_run(s, off, true);
		len = block_run(s, off, false);
		if (len)
			ret = pwrite_full(job->data_fd, s->buf + off, len, s->file_off + off);
		off += len;
	}
	if (ret) {
		image_name(name, sizeof(name), job, "img");
		return job_fail(job, ret, "gpu %" PRIu32 ": writing %s at 0x%" PRIx64 ": %s",
				job->gpu->gpu_id, name, s->file_off + off, strerror(-ret));
	}
	return 0;
}

/* The chunk is a hole of the data file (reads as zeros); false if unsure. */
static bool chunk_is_hole(struct gpu_job *job, const struct staging_slot *s)
{
	off_t data = lseek(job->data_fd, (off_t)s->file_off, SEEK_DATA);

	/* ENXIO: no data from there to the end; other errors: no SEEK_DATA here */
	if (data < 0)
		return errno == ENXIO;
	return (uint64_t)data >= s->file_off + s->len;
}

static int restore_fill(struct gpu_job *job, struct staging_slot *s)
{
	uint32_t crc;
	char name[64];
	int ret = 0;

	/* a hole needs no read, no CRC pass, no copy: zeros and their checksum */
	s->zero = chunk_is_hole(job, s);
	if (s->zero && !job->zeros)
		job->zeros = calloc(1, job->chunk_size);
	if (!job->zeros)
		s->zero = false; /* no memory for it: read the zeros */
	if (!s->zero)
		ret = pread_full(job->data_fd, s->buf, s->len, s->file_off);
	image_name(name, sizeof(name), job, "img");
	if (ret)
		return job_fail(job, ret == -ENODATA ? -EIO : ret,
				"gpu %" PRIu32 ": BO %" PRIu32 " offset 0x%" PRIx64
				": reading %s at 0x%" PRIx64 ": %s",
				job->gpu->gpu_id, s->bo_index, s->bo_off, name, s->file_off,
				ret == -ENODATA ? "file truncated" : strerror(-ret));
	crc = s->zero ? zero_checksum(job, s->len) : checksum(s->buf, s->len);
	if (crc != job->crcs[s->chunk_index])
		return job_fail(job, -EBADMSG,
				"gpu %" PRIu32 ": BO %" PRIu32 " offset 0x%" PRIx64
				": checksum mismatch in %s (chunk at 0x%" PRIx64
				", crc32 0x%08" PRIx32 ", expected 0x%08" PRIx32 ")",
				job->gpu->gpu_id, s->bo_index, s->bo_off, name, s->file_off, crc,
				job->crcs[s->chunk_index]);
	return 0;
}

static int restore_drain(struct gpu_job *job, struct staging_slot *s)
{
	int ret = bo_switch(job, s->bo_index);

	if (ret)
		return ret;
	ret = job->engine->ops->write(job->cur.handle, s->bo_off, s->zero ? job->zeros : s->buf,
				      s->len);
	if (ret)
		return job_fail(job, ret,
				"gpu %" PRIu32 ": BO %" PRIu32 " offset 0x%" PRIx64
				": copy engine write: %s",
				job->gpu->gpu_id, s->bo_index, s->bo_off, strerror(-ret));
	return 0;
}

static void report_progress(struct gpu_job *job, uint32_t len)
{
	const struct bo_stream_config *cfg = job->cfg;
	uint64_t step = cfg->progress_step ? cfg->progress_step : BO_STREAM_DEFAULT_PROGRESS_STEP;

	job->done_bytes += len;
	if (!cfg->progress)
		return;
	if (job->done_bytes < job->next_progress && job->done_bytes != job->data_bytes)
		return;
	while (job->next_progress <= job->done_bytes && job->next_progress <= UINT64_MAX - step)
		job->next_progress += step;
	cfg->progress(cfg->progress_arg, job->gpu->gpu_id, job->done_bytes, job->data_bytes);
}

/* ---- threads ---------------------------------------------------------------------------- */

static void *producer_main(void *arg)
{
	struct gpu_job *job = arg;
	struct chunk_cursor c = {0};
	struct staging_slot pos, *s;

	while (cursor_next(job, &c, &pos)) {
		s = ring_claim(&job->ring);
		if (!s)
			break;
		s->len = pos.len;
		s->bo_index = pos.bo_index;
		s->bo_off = pos.bo_off;
		s->file_off = pos.file_off;
		s->chunk_index = pos.chunk_index;
		if (job->dir == STREAM_DUMP ? dump_fill(job, s) : restore_fill(job, s))
			break;
		ring_publish(&job->ring);
	}
	if (job->dir == STREAM_DUMP)
		bo_close(job);
	ring_finish(&job->ring);
	return NULL;
}

static int write_index(struct gpu_job *job);

static void *consumer_main(void *arg)
{
	struct gpu_job *job = arg;
	struct staging_slot *s;

	while ((s = ring_take(&job->ring))) {
		if (job->dir == STREAM_DUMP ? dump_drain(job, s) : restore_drain(job, s))
			break;
		report_progress(job, s->len);
		ring_release(&job->ring);
	}
	if (job->dir == STREAM_RESTORE)
		bo_close(job);
	else if (!job_error(job))
		write_index(job);
	return NULL;
}

/* Starts both threads; on failure stops and joins what was started. */
static int job_start(struct gpu_job *job)
{
	int ret;

	ret = pthread_create(&job->producer, NULL, producer_main, job);
	if (ret)
		return job_fail(job, -ret, "gpu %" PRIu32 ": cannot start a thread: %s",
				job->gpu->gpu_id, strerror(ret));
	job->producer_running = true;
	ret = pthread_create(&job->consumer, NULL, consumer_main, job);
	if (ret)
		return job_fail(job, -ret, "gpu %" PRIu32 ": cannot start a thread: %s",
				job->gpu->gpu_id, strerror(ret));
	job->consumer_running = true;
	return 0;
}

static void job_join(struct gpu_job *job)
{
	if (job->producer_running)
		pthread_join(job->producer, NULL);
	if (job->consumer_running)
		pthread_join(job->consumer, NULL);
	job->producer_running = job->consumer_running = false;
}

/* ---- index file ---------------------------------------------------------------------- */

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static void index_encode(const struct gpu_job *job, uint8_t *buf, size_t len)
{
	const struct bo_stream_gpu *g = job->gpu;
	uint8_t *p = buf + INDEX_HEADER_SIZE;
	uint64_t off = 0, i;

	memset(buf, 0, INDEX_HEADER_SIZE);
	memcpy(buf, INDEX_MAGIC, 8);
	put32(buf + 8, INDEX_VERSION);
	put32(buf + 12, g->gpu_id);
	put32(buf + 16, job->cfg->image_id);
	put32(buf + 20, job->chunk_size);
	put32(buf + 24, g->bo_count);
	put64(buf + 32, job->data_bytes);
	put64(buf + 40, job->chunk_count);
	for (i = 0; i < g->bo_count; i++, p += INDEX_BO_SIZE) {
		put64(p, g->bos[i].size);
		put64(p + 8, off);
		off += g->bos[i].size;
	}
	for (i = 0; i < job->chunk_count; i++, p += INDEX_CRC_SIZE)
		put32(p, job->crcs[i]);
	put32(p, checksum(buf, len - INDEX_CRC_SIZE));
}

/* Consumer thread of a dump, after the last chunk: index, then durability. */
static int write_index(struct gpu_job *job)
{
	size_t len = index_size(job);
	uint8_t *buf = malloc(len);
	char name[64];
	int ret;

	image_name(name, sizeof(name), job, "idx");
	if (!buf)
		return job_fail(job, -ENOMEM, "gpu %" PRIu32 ": no memory for %s", job->gpu->gpu_id,
				name);
	index_encode(job, buf, len);
	ret = pwrite_full(job->index_fd, buf, len, 0);
	free(buf);
	if (!ret && job->cfg->sync && (fdatasync(job->data_fd) || fdatasync(job->index_fd)))
		ret = -errno;
	if (ret)
		return job_fail(job, ret, "gpu %" PRIu32 ": writing %s: %s", job->gpu->gpu_id, name,
				strerror(-ret));
	return 0;
}

static int index_check_header(struct gpu_job *job, const uint8_t *h, const char *name)
{
	const struct bo_stream_gpu *g = job->gpu;
	uint32_t chunk = get32(h + 20);

	if (memcmp(h, INDEX_MAGIC, 8) || get32(h + 8) != INDEX_VERSION)
		return job_fail(job, -EINVAL, "gpu %" PRIu32 ": %s: not a BO index (version 1)",
				g->gpu_id, name);
	if (get32(h + 12) != g->gpu_id || get32(h + 16) != job->cfg->image_id)
		return job_fail(job, -EINVAL,
				"gpu %" PRIu32 ": %s: recorded for gpu %" PRIu32 " image %" PRIu32,
				g->gpu_id, name, get32(h + 12), get32(h + 16));
	if (!chunk || chunk % FILE_PAGE || chunk > BO_STREAM_MAX_CHUNK)
		return job_fail(job, -EINVAL, "gpu %" PRIu32 ": %s: bad chunk size %" PRIu32,
				g->gpu_id, name, chunk);
	if (get32(h + 24) != g->bo_count)
		return job_fail(job, -EINVAL,
				"gpu %" PRIu32 ": %s: %" PRIu32 " BOs recorded, %" PRIu32
				" expected",
				g->gpu_id, name, get32(h + 24), g->bo_count);
	job->chunk_size = chunk;
	return 0;
}

/* The rest of the index against the layout computed from the caller's BO sizes. */
static int index_check_body(struct gpu_job *job, const uint8_t *buf, size_t len, const char *name)
{
	const struct bo_stream_gpu *g = job->gpu;
	const uint8_t *p = buf + INDEX_HEADER_SIZE;
	uint64_t off = 0, i;

	if (get32(buf + len - INDEX_CRC_SIZE) != checksum(buf, len - INDEX_CRC_SIZE))
		return job_fail(job, -EBADMSG, "gpu %" PRIu32 ": %s: index checksum mismatch",
				g->gpu_id, name);
	if (get64(buf + 32) != job->data_bytes || get64(buf + 40) != job->chunk_count)
		return job_fail(job, -EINVAL, "gpu %" PRIu32 ": %s: sizes do not match the BOs",
				g->gpu_id, name);
	for (i = 0; i < g->bo_count; i++, p += INDEX_BO_SIZE) {
		if (get64(p) != g->bos[i].size || get64(p + 8) != off)
			return job_fail(job, -EINVAL,
					"gpu %" PRIu32 ": %s: BO %" PRIu64
					" recorded with size 0x%" PRIx64 ", expected 0x%" PRIx64,
					g->gpu_id, name, i, get64(p), g->bos[i].size);
		off += g->bos[i].size;
	}
	for (i = 0; i < job->chunk_count; i++, p += INDEX_CRC_SIZE)
		job->crcs[i] = get32(p);
	return 0;
}

static int index_read(struct gpu_job *job)
{
	uint8_t header[INDEX_HEADER_SIZE], *buf = NULL;
	struct stat st;
	char name[64];
	size_t len;
	int ret;

	image_name(name, sizeof(name), job, "idx");
	ret = pread_full(job->index_fd, header, sizeof(header), 0);
	if (ret)
		return job_fail(job, ret == -ENODATA ? -EINVAL : ret, "gpu %" PRIu32 ": %s: %s",
				job->gpu->gpu_id, name,
				ret == -ENODATA ? "file truncated" : strerror(-ret));
	ret = index_check_header(job, header, name);
	if (!ret)
		ret = job_layout(job);
	if (ret)
		return ret;
	len = index_size(job);
	if (fstat(job->index_fd, &st))
		return job_fail_errno(job, "", name);
	if ((uint64_t)st.st_size != len)
		return job_fail(job, -EINVAL, "gpu %" PRIu32 ": %s: %jd bytes, expected %zu",
				job->gpu->gpu_id, name, (intmax_t)st.st_size, len);
	job->crcs = malloc(job->chunk_count ? job->chunk_count * INDEX_CRC_SIZE : 1);
	buf = malloc(len);
	ret = buf && job->crcs ? pread_full(job->index_fd, buf, len, 0) : -ENOMEM;
	if (ret)
		ret = job_fail(job, ret, "gpu %" PRIu32 ": %s: %s", job->gpu->gpu_id, name,
			       strerror(-ret));
	else
		ret = index_check_body(job, buf, len, name);
	free(buf);
	return ret;
}

/* ---- per-GPU setup ---------------------------------------------------------------------- */

static int open_image(struct gpu_job *job, const char *ext, int *fd)
{
	int flags = O_CLOEXEC | O_NOFOLLOW;
	char name[64];

	image_name(name, sizeof(name), job, ext);
	if (job->dir == STREAM_DUMP)
		flags |= O_WRONLY | O_CREAT | O_EXCL;
	else
		flags |= O_RDONLY;
	*fd = openat(job->cfg->dir_fd, name, flags, 0600);
	if (*fd < 0)
		return job_fail_errno(job, "", name);
	return 0;
}

static int check_data_size(struct gpu_job *job)
{
	struct stat st;
	char name[64];

	image_name(name, sizeof(name), job, "img");
	if (fstat(job->data_fd, &st))
		return job_fail_errno(job, "", name);
	if ((uint64_t)st.st_size != job->data_bytes)
		return job_fail(job, -EINVAL,
				"gpu %" PRIu32 ": %s is %s: %jd bytes, the index says %" PRIu64,
				job->gpu->gpu_id, name,
				(uint64_t)st.st_size < job->data_bytes ? "truncated" : "too long",
				(intmax_t)st.st_size, job->data_bytes);
	return 0;
}

static int job_prepare_dump(struct gpu_job *job)
{
	int ret = job_layout(job);

	if (ret)
		return ret;
	job->crcs = malloc(job->chunk_count ? job->chunk_count * INDEX_CRC_SIZE : 1);
	if (!job->crcs)
		return job_fail(job, -ENOMEM, "gpu %" PRIu32 ": no memory", job->gpu->gpu_id);
	ret = open_image(job, "img", &job->data_fd);
	if (ret)
		return ret;
	job->created_data = true;
	ret = open_image(job, "idx", &job->index_fd);
	if (ret)
		return ret;
	job->created_index = true;
	/* Sets the size up front: a file with holes is not mistaken for a whole one. */
	if (ftruncate(job->data_fd, (off_t)job->data_bytes))
		return job_fail_errno(job, "sizing", "the image");
	return 0;
}

static int job_prepare_restore(struct gpu_job *job)
{
	int ret = open_image(job, "idx", &job->index_fd);

	if (!ret)
		ret = index_read(job);
	if (!ret)
		ret = open_image(job, "img", &job->data_fd);
	if (!ret)
		ret = check_data_size(job);
	return ret;
}

static int job_prepare(struct gpu_job *job)
{
	int ret = job->dir == STREAM_DUMP ? job_prepare_dump(job) : job_prepare_restore(job);
	uint32_t depth = job->cfg->ring_depth ? job->cfg->ring_depth : BO_STREAM_DEFAULT_DEPTH;

	if (ret)
		return ret;
	if (ring_alloc(&job->ring, depth, job->chunk_size))
		return job_fail(job, -ENOMEM,
				"gpu %" PRIu32 ": no memory for %" PRIu32
				" staging chunks of %" PRIu32 " bytes",
				job->gpu->gpu_id, depth, job->chunk_size);
	return 0;
}

/* ---- the whole stream ------------------------------------------------------------------- */

struct stream {
	const struct bo_stream_config *cfg;
	struct bo_stream_gpu *gpus;
	uint32_t gpu_count;
	enum stream_dir dir;
	struct gpu_job *jobs;
	uint32_t jobs_ready; /* jobs[0..jobs_ready-1] have their ring lock */
};

static int check_gpu(const struct bo_stream_gpu *g, char *err, size_t errlen)
{
	if (g->bo_count > BO_STREAM_MAX_BOS)
		return errmsg_set(err, errlen, -EINVAL,
				  "gpu %" PRIu32 ": %" PRIu32 " BOs, at most %u", g->gpu_id,
				  g->bo_count, BO_STREAM_MAX_BOS);
	if (g->bo_count && !g->bos)
		return errmsg_set(err, errlen, -EINVAL, "gpu %" PRIu32 ": no BO array", g->gpu_id);
	return 0;
}

static int check_config(const struct stream *st, char *err, size_t errlen)
{
	const struct bo_stream_config *cfg = st->cfg;
	uint32_t i, j;
	int ret;

	if (!cfg || cfg->dir_fd < 0 || (st->gpu_count && !st->gpus))
		return errmsg_set(err, errlen, -EINVAL, "bo_stream: no image directory or no GPUs");
	if (cfg->chunk_size % FILE_PAGE || cfg->chunk_size > BO_STREAM_MAX_CHUNK)
		return errmsg_set(err, errlen, -EINVAL, "bo_stream: bad chunk size %" PRIu32,
				  cfg->chunk_size);
	if (cfg->ring_depth == 1 || cfg->ring_depth > BO_STREAM_MAX_DEPTH)
		return errmsg_set(err, errlen, -EINVAL, "bo_stream: bad ring depth %" PRIu32,
				  cfg->ring_depth);
	for (i = 0; i < st->gpu_count; i++) {
		ret = check_gpu(&st->gpus[i], err, errlen);
		if (ret)
			return ret;
		for (j = 0; j < i; j++)
			if (st->gpus[j].gpu_id == st->gpus[i].gpu_id)
				return errmsg_set(err, errlen, -EINVAL,
						  "gpu %" PRIu32 " listed twice",
						  st->gpus[i].gpu_id);
	}
	return 0;
}

static int stream_init(struct stream *st, char *err, size_t errlen)
{
	struct gpu_job *job;
	uint32_t i;

	st->jobs = calloc(st->gpu_count ? st->gpu_count : 1, sizeof(*st->jobs));
	if (!st->jobs)
		return errmsg_set(err, errlen, -ENOMEM, "bo_stream: no memory");
	for (i = 0; i < st->gpu_count; i++) {
		job = &st->jobs[i];
		if (ring_init(&job->ring))
			return errmsg_set(err, errlen, -ENOMEM, "bo_stream: no memory");
		st->jobs_ready++;
		job->cfg = st->cfg;
		job->gpu = &st->gpus[i];
		job->engine = job->gpu->engine ? job->gpu->engine : &bo_copy_engine_cpu;
		job->dir = st->dir;
		job->chunk_size =
			st->cfg->chunk_size ? st->cfg->chunk_size : BO_STREAM_DEFAULT_CHUNK;
		job->data_fd = job->index_fd = -1;
		job->next_progress = st->cfg->progress_step ? st->cfg->progress_step
							    : BO_STREAM_DEFAULT_PROGRESS_STEP;
	}
	return 0;
}

static int stream_prepare(struct stream *st)
{
	uint32_t i;
	int ret;

	for (i = 0; i < st->gpu_count; i++) {
		ret = job_prepare(&st->jobs[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* Runs every GPU's pipeline in parallel; returns once all threads are joined. */
static void stream_run(struct stream *st)
{
	uint32_t i;

	for (i = 0; i < st->gpu_count; i++)
		if (job_start(&st->jobs[i]))
			break;
	for (i = 0; i < st->gpu_count; i++)
		job_join(&st->jobs[i]);
}

/* The first GPU's error, its message into err. */
static int stream_result(const struct stream *st, char *err, size_t errlen)
{
	uint32_t i;

	for (i = 0; i < st->jobs_ready; i++)
		if (st->jobs[i].ring.error)
			return errmsg_set(err, errlen, st->jobs[i].ring.error, "%s",
					  st->jobs[i].ring.msg);
	return 0;
}

static void unlink_images(struct gpu_job *job)
{
	char name[64];

	if (job->created_data) {
		image_name(name, sizeof(name), job, "img");
		unlinkat(job->cfg->dir_fd, name, 0);
	}
	if (job->created_index) {
		image_name(name, sizeof(name), job, "idx");
		unlinkat(job->cfg->dir_fd, name, 0);
	}
}

static void close_dmabufs(struct bo_stream_gpu *g)
{
	uint32_t i;

	for (i = 0; g->bos && i < g->bo_count; i++)
		close_fd(&g->bos[i].dmabuf_fd);
}

static void stream_teardown(struct stream *st, bool failed)
{
	struct gpu_job *job;
	uint32_t i;

	for (i = 0; i < st->jobs_ready; i++) {
		job = &st->jobs[i];
		if (failed)
			unlink_images(job);
		close_fd(&job->data_fd);
		close_fd(&job->index_fd);
		free(job->crcs);
		free(job->zeros);
		ring_destroy(&job->ring);
	}
	free(st->jobs);
}

static int stream(enum stream_dir dir, const struct bo_stream_config *cfg,
		  struct bo_stream_gpu *gpus, uint32_t gpu_count, char *err, size_t errlen)
{
	struct stream st = {.cfg = cfg, .gpus = gpus, .gpu_count = gpu_count, .dir = dir};
	uint32_t i;
	int ret;

	if (err && errlen)
		err[0] = 0;
	ret = check_config(&st, err, errlen);
	if (!ret)
		ret = stream_init(&st, err, errlen);
	if (!ret) {
		if (!stream_prepare(&st))
			stream_run(&st);
		ret = stream_result(&st, err, errlen);
	}
	stream_teardown(&st, ret != 0);
	for (i = 0; gpus && i < gpu_count; i++)
		close_dmabufs(&gpus[i]);
	return ret;
}

int bo_stream_dump(const struct bo_stream_config *cfg, struct bo_stream_gpu *gpus,
		   uint32_t gpu_count, char *err, size_t errlen)
{
	return stream(STREAM_DUMP, cfg, gpus, gpu_count, err, errlen);
}

int bo_stream_restore(const struct bo_stream_config *cfg, struct bo_stream_gpu *gpus,
		      uint32_t gpu_count, char *err, size_t errlen)
{
	return stream(STREAM_RESTORE, cfg, gpus, gpu_count, err, errlen);
}

/* ---- verification without BOs ------------------------------------------------------------ */

/* Reads and checks every chunk of an opened, index-checked image; the first bad one in *fault. */
static int verify_chunks(struct gpu_job *job, struct bo_stream_fault *fault)
{
	struct chunk_cursor c = {0};
	struct staging_slot s = {0};
	int ret = 0;

	s.buf = malloc(job->data_bytes < job->chunk_size ? (size_t)job->data_bytes + 1
							 : job->chunk_size);
	if (!s.buf)
		return job_fail(job, -ENOMEM, "gpu %" PRIu32 ": no memory for a chunk",
				job->gpu->gpu_id);
	while (!ret && cursor_next(job, &c, &s)) {
		ret = restore_fill(job, &s);
		if (ret && fault)
			*fault = (struct bo_stream_fault){.located = true,
							  .bo_index = s.bo_index,
							  .bo_offset = s.bo_off,
							  .chunk_len = s.len};
	}
	free(s.buf);
	return ret;
}

static int verify_job(struct gpu_job *job, bool chunks, struct bo_stream_fault *fault)
{
	int ret = job_prepare_restore(job);

	return ret || !chunks ? ret : verify_chunks(job, fault);
}

static int verify(int dir_fd, uint32_t image_id, uint32_t gpu_id, const uint64_t *bo_sizes,
		  uint32_t bo_count, bool chunks, struct bo_stream_fault *fault, char *err,
		  size_t errlen)
{
	struct bo_stream_config cfg = {.dir_fd = dir_fd, .image_id = image_id};
	struct bo_stream_gpu gpu = {.gpu_id = gpu_id, .bo_count = bo_count};
	struct gpu_job job = {
		.cfg = &cfg, .gpu = &gpu, .dir = STREAM_RESTORE, .data_fd = -1, .index_fd = -1};
	uint32_t i;
	int ret;

	if (fault)
		*fault = (struct bo_stream_fault){0};
	if (err && errlen)
		err[0] = 0;
	if (dir_fd < 0 || (bo_count && !bo_sizes) || bo_count > BO_STREAM_MAX_BOS)
		return errmsg_set(err, errlen, -EINVAL, "gpu %" PRIu32 ": bad arguments", gpu_id);
	gpu.bos = calloc(bo_count ? bo_count : 1, sizeof(*gpu.bos));
	if (!gpu.bos || ring_init(&job.ring)) {
		free(gpu.bos);
		return errmsg_set(err, errlen, -ENOMEM, "gpu %" PRIu32 ": no memory", gpu_id);
	}
	for (i = 0; i < bo_count; i++)
		gpu.bos[i] = (struct bo_stream_bo){.size = bo_sizes[i], .dmabuf_fd = -1};
	ret = verify_job(&job, chunks, fault);
	if (ret)
		errmsg_set(err, errlen, ret, "%s", job.ring.msg);
	close_fd(&job.data_fd);
	close_fd(&job.index_fd);
	free(job.crcs);
	free(job.zeros);
	ring_destroy(&job.ring);
	free(gpu.bos);
	return ret;
}

int bo_stream_verify(int dir_fd, uint32_t image_id, uint32_t gpu_id, const uint64_t *bo_sizes,
		     uint32_t bo_count, struct bo_stream_fault *fault, char *err, size_t errlen)
{
	return verify(dir_fd, image_id, gpu_id, bo_sizes, bo_count, true, fault, err, errlen);
}

int bo_stream_check_files(int dir_fd, uint32_t image_id, uint32_t gpu_id, const uint64_t *bo_sizes,
			  uint32_t bo_count, char *err, size_t errlen)
{
	return verify(dir_fd, image_id, gpu_id, bo_sizes, bo_count, false, NULL, err, errlen);
}

void bo_stream_remove(int dir_fd, uint32_t image_id, uint32_t gpu_id)
{
	static const char *const exts[] = {"img", "idx"};
	char name[64];
	size_t i;

	for (i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "amdgpu-bo-%" PRIu32 "-%" PRIu32 ".%s", image_id,
			 gpu_id, exts[i]);
		unlinkat(dir_fd, name, 0);
	}
}
