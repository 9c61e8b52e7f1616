// SPDX-License-Identifier: MIT
/* The per-GPU pipeline of a BO stream (see bo_stream_job.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "common/fullio.h"
#include "images/bo_index.h"
#include "common/regfile.h"
#include "images/bo_stream.h"
#include "images/staging_ring.h"
#include "images/bo_stream_job.h"
#include "common/thread_fs.h"

#define ERR_LEN RING_MSG_LEN

uint64_t bo_job_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- errors ----------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) int bo_job_fail(struct gpu_job *job, int err, const char *fmt,
						      ...)
{
	va_list ap;

	va_start(ap, fmt);
	ring_failv(&job->ring, err, fmt, ap);
	va_end(ap);
	return err;
}

/* bo_job_fail() for a failed system call: errno, its text after the message. */
static int job_fail_errno(struct gpu_job *job, const char *what, const char *name)
{
	int e = errno;

	return bo_job_fail(job, -e, "gpu %" PRIu32 ": %s%s%s: %s", job->gpu->gpu_id, what,
			   *what ? " " : "", name, strerror(e));
}

static int job_error(struct gpu_job *job)
{
	return ring_error(&job->ring);
}

/* ---- checksums ---------------------------------------------------------------------- */

/* zlib's CRC-32 (the same polynomial as gzip and PNG; ISA-L computes it), one per chunk. */
static uint32_t checksum(const void *buf, size_t len)
{
	return bo_index_crc32(0, buf, len);
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
	uint32_t crc = 0;
	uint32_t n, left;

	if (len == job->chunk_size && job->zero_crc_known)
		return job->zero_crc;
	for (left = len; left; left -= n) {
		n = left < FILE_PAGE ? left : FILE_PAGE;
		crc = bo_index_crc32(crc, zero_page, n);
	}
	if (len == job->chunk_size) {
		job->zero_crc = (uint32_t)crc;
		job->zero_crc_known = true;
	}
	return crc;
}

/*
 * A slot's checksum, and (digest non-NULL, a dump) its CRC-64, their time
 * counted (bo_stream_times.checksum_ns).
 */
static uint32_t slot_checksum_timed(struct gpu_job *job, const struct staging_slot *s,
				    uint8_t *digest, uint64_t *ns)
{
	uint64_t start = bo_job_now_ns();
	uint32_t crc = s->zero ? zero_checksum(job, s->len) : checksum(s->buf, s->len);

	if (digest)
		bo_index_digest(s->buf, s->len, digest);
	*ns += bo_job_now_ns() - start;
	return crc;
}

/* On the thread that owns checksum_ns: the dump's producer, the restore's consumer. */
static uint32_t slot_checksum(struct gpu_job *job, const struct staging_slot *s, uint8_t *digest)
{
	return slot_checksum_timed(job, s, digest, &job->checksum_ns);
}

/* ---- the BO side ----------------------------------------------------------------------- */

void bo_job_close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* An engine error in words: the engine's own, else strerror's. */
static const char *engine_error(const struct gpu_job *job, int ret)
{
	const char *why = job->engine->ops->explain ? job->engine->ops->explain(ret) : NULL;

	return why ? why : strerror(-ret);
}

static void bo_close_slot(struct gpu_job *job, struct open_bo *slot)
{
	if (slot->handle) {
		job->engine->ops->close_bo(slot->handle);
		bo_job_close_fd(&job->gpu->bos[slot->index].dmabuf_fd);
	}
	slot->handle = NULL;
}

/* Makes BO `index` the one open in slot (closing the previous one and its fd). */
static int bo_switch_slot(struct gpu_job *job, struct open_bo *slot, uint32_t index)
{
	struct bo_stream_bo *bo = &job->gpu->bos[index];
	enum bo_access access = job->dir == STREAM_DUMP ? BO_ACCESS_READ : BO_ACCESS_WRITE;
	int ret;

	if (slot->handle && slot->index == index)
		return 0;
	bo_close_slot(job, slot);
	if (bo->dmabuf_fd < 0)
		return bo_job_fail(job, -EBADF, "gpu %" PRIu32 ": BO %" PRIu32 " has no dma-buf fd",
				   job->gpu->gpu_id, index);
	ret = job->engine->ops->open_bo(job->engine, bo->dmabuf_fd, bo->size, access,
					&slot->handle);
	if (ret) {
		slot->handle = NULL;
		return bo_job_fail(job, ret,
				   "gpu %" PRIu32 ": BO %" PRIu32 ": copy engine open: %s",
				   job->gpu->gpu_id, index, engine_error(job, ret));
	}
	slot->index = index;
	return 0;
}

/* The BO open on the engine side (the dump's producer, the restore's consumer). */
static void bo_close(struct gpu_job *job)
{
	bo_close_slot(job, &job->cur);
}

static int bo_switch(struct gpu_job *job, uint32_t index)
{
	return bo_switch_slot(job, &job->cur, index);
}

/* ---- files --------------------------------------------------------------------------- */

#define BO_FILE_PREFIX "amdgpu-bo-"

void bo_stream_file_name(char *buf, size_t len, uint32_t image_id, uint32_t gpu_id, const char *ext)
{
	snprintf(buf, len, BO_FILE_PREFIX "%" PRIu32 "-%" PRIu32 ".%s", image_id, gpu_id, ext);
}

int bo_stream_file_image_id(const char *name, uint32_t *image_id)
{
	const char *p = name + strlen(BO_FILE_PREFIX);
	unsigned long v;
	char *end;

	if (strncmp(name, BO_FILE_PREFIX, strlen(BO_FILE_PREFIX)) || *p < '0' || *p > '9')
		return -1;
	errno = 0;
	v = strtoul(p, &end, 10);
	if (errno || v > UINT32_MAX || *end != '-' || end[1] < '0' || end[1] > '9')
		return -1;
	strtoul(end + 1, &end, 10);
	if (strcmp(end, ".img") && strcmp(end, ".idx"))
		return -1;
	*image_id = (uint32_t)v;
	return 0;
}

void bo_job_image_name(char *buf, size_t len, const struct gpu_job *job, const char *ext)
{
	bo_stream_file_name(buf, len, job->cfg->image_id, job->gpu->gpu_id, ext);
}

/* ---- chunk layout ----------------------------------------------------------------------- */

/* The job's index layout (the file name is the caller's buffer). */
static struct bo_index_layout job_index(const struct gpu_job *job, const char *name)
{
	return (struct bo_index_layout){.gpu_id = job->gpu->gpu_id,
					.image_id = job->cfg->image_id,
					.chunk_size = job->chunk_size,
					.bo_count = job->gpu->bo_count,
					.bos = job->gpu->bos,
					.name = name,
					.data_bytes = job->data_bytes,
					.chunk_count = job->chunk_count};
}

/* Sums the BO sizes and chunk counts; -EOVERFLOW on absurd sizes. */
static int job_layout(struct gpu_job *job)
{
	struct bo_index_layout l = job_index(job, "");
	char msg[ERR_LEN];
	int ret = bo_index_layout(&l, msg, sizeof(msg));

	if (ret)
		return bo_job_fail(job, ret, "%s", msg);
	job->data_bytes = l.data_bytes;
	job->chunk_count = l.chunk_count;
	return 0;
}

bool bo_job_cursor_next(const struct gpu_job *job, struct chunk_cursor *c, struct staging_slot *s)
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

/*
 * The chunk's index entry: here, or (incremental) where the parent has the
 * same bytes: same CRC-32 and CRC-64 at the same offset of the same BO.
 * Zero chunks stay here: a hole costs nothing.
 */
static int dump_entry(struct gpu_job *job, struct staging_slot *s)
{
	struct bo_chunk_entry *e = &job->entries[s->chunk_index], pe;
	const struct bo_stream_bo *bo = &job->gpu->bos[s->bo_index];
	int ret;

	e->crc = slot_checksum(job, s, e->digest);
	e->level = 0;
	s->level = 0;
	e->flags = s->zero ? BO_CHUNK_ZERO : 0;
	e->offset = s->file_off;
	if (s->zero)
		job->zero_bytes += s->len;
	if (!job->parent || s->zero)
		goto written;
	ret = bo_parent_lookup(job->parent, s->bo_index, bo->gpu_va, bo->size, s->bo_off, &pe);
	if (ret == -EIO)
		return bo_job_fail(job, -EIO,
				   "gpu %" PRIu32 ": BO %" PRIu32 " offset 0x%" PRIx64
				   ": reading the parent's index failed",
				   job->gpu->gpu_id, s->bo_index, s->bo_off);
	if (ret || pe.crc != e->crc || memcmp(pe.digest, e->digest, BO_DIGEST_LEN))
		goto written;
	e->level = pe.level;
	s->level = pe.level;
	e->offset = pe.offset;
	if (pe.level > job->max_level)
		job->max_level = pe.level;
	job->parent_bytes += s->len;
	return 0;
written:
	/* counted here, on the producer, which sees every chunk (in place or not) */
	if (!s->zero)
		job->written_bytes += s->len;
	return 0;
}

static int dump_fill(struct gpu_job *job, struct staging_slot *s)
{
	int ret = bo_switch(job, s->bo_index);

	if (ret)
		return ret;
	ret = job->engine->ops->read(job->cur.handle, s->bo_off, s->buf, s->len);
	if (ret)
		return bo_job_fail(job, ret,
				   "gpu %" PRIu32 ": BO %" PRIu32 " offset 0x%" PRIx64
				   ": copy engine read: %s",
				   job->gpu->gpu_id, s->bo_index, s->bo_off,
				   engine_error(job, ret));
	/* the zero test stops at the first non-zero byte: cheap for data */
	s->zero = is_zero(s->buf, s->len);
	return dump_entry(job, s);
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
 * One run of a chunk's pages: through O_DIRECT where buffer, offset and
 * length are page-aligned (the staging buffers are; BOs are page multiples,
 * so all but a short last run are), from the page cache otherwise. A file
 * system that refuses the direct write (EINVAL) makes the rest buffered.
 */
static int write_run(struct gpu_job *job, const uint8_t *buf, size_t len, uint64_t off)
{
	int ret;

	if (job->direct_fd >= 0 && !((uintptr_t)buf % FILE_PAGE) && !(len % FILE_PAGE) &&
	    !(off % FILE_PAGE)) {
		ret = pwrite_full(job->direct_fd, buf, len, off);
		if (ret != -EINVAL)
			return ret;
		bo_job_close_fd(&job->direct_fd);
		job->gpu->direct_io = false;
	}
	return pwrite_full(job->data_fd, buf, len, off);
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

	if (s->zero || s->level)
		return 0;
	while (!ret && off < s->len) {
		off += block_run(s, off, true);
		len = block_run(s, off, false);
		if (len)
			ret = write_run(job, s->buf + off, len, s->file_off + off);
		off += len;
	}
	/* a hint: a file system without it still gets the final fdatasync() */
	if (!ret && job->cfg->sync)
		sync_file_range(job->data_fd, (off_t)s->file_off, s->len, SYNC_FILE_RANGE_WRITE);
	if (ret) {
		bo_job_image_name(name, sizeof(name), job, "img");
		return bo_job_fail(job, ret, "gpu %" PRIu32 ": writing %s at 0x%" PRIx64 ": %s",
				   job->gpu->gpu_id, name, s->file_off + off, strerror(-ret));
	}
	return 0;
}

/* chunk_size zero bytes costing no memory; NULL if no address space is left. */
static uint8_t *zeros_map(uint32_t chunk_size)
{
	void *p = mmap(NULL, chunk_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void bo_job_zeros_unmap(uint8_t *zeros, uint32_t chunk_size)
{
	if (zeros)
		munmap(zeros, chunk_size);
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

/* A chunk an ancestor holds (a restore of an incremental image). */
static int restore_fill_ancestor(struct gpu_job *job, struct staging_slot *s)
{
	const char *name = job->chain.name[s->level - 1];
	int ret;

	s->zero = false;
	ret = pread_full(job->chain.data_fd[s->level - 1], s->buf, s->len, s->src_off);
	if (ret)
		return bo_job_fail(job, ret == -ENODATA ? -EIO : ret,
				   "gpu %" PRIu32 ": BO %" PRIu32 " offset 0x%" PRIx64
				   ": reading %s (parent level %" PRIu32 ") at 0x%" PRIx64 ": %s",
				   job->gpu->gpu_id, s->bo_index, s->bo_off, name, s->level,
				   s->src_off, ret == -ENODATA ? "file truncated" : strerror(-ret));
	return 0;
}

int bo_job_restore_fill(struct gpu_job *job, struct staging_slot *s)
{
	struct bo_chunk_entry e;
	char name[64];
	int ret = bo_index_entry_get(job->reader, s->chunk_index, &e);

	if (ret)
		return bo_job_fail(job, ret,
				   "gpu %" PRIu32 ": reading the entry of chunk %" PRIu64
				   " from the index: %s",
				   job->gpu->gpu_id, s->chunk_index, strerror(-ret));
	s->crc = e.crc;
	s->level = e.level;
	s->src_off = e.offset;
	if (s->level)
		return restore_fill_ancestor(job, s);
	/* a hole needs no read, no CRC pass, no copy: zeros and their checksum */
	s->zero = chunk_is_hole(job, s);
	if (!job->engine->ops->zero) {
		if (s->zero && !job->zeros)
			job->zeros = zeros_map(job->chunk_size);
		if (!job->zeros)
			s->zero = false; /* no memory for it: read the zeros */
	}
	if (!s->zero)
		ret = pread_full(job->data_fd, s->buf, s->len, s->file_off);
	bo_job_image_name(name, sizeof(name), job, "img");
	if (ret)
		return bo_job_fail(job, ret == -ENODATA ? -EIO : ret,
				   "gpu %" PRIu32 ": BO %" PRIu32 " offset 0x%" PRIx64
				   ": reading %s at 0x%" PRIx64 ": %s",
				   job->gpu->gpu_id, s->bo_index, s->bo_off, name, s->file_off,
				   ret == -ENODATA ? "file truncated" : strerror(-ret));
	return 0;
}

/*
 * Checked by the consumer, before the chunk reaches the BO: the reading
 * thread only reads, as fast as the file allows (what make bench's limit
 * measures), and the CRC-32 pass runs on the other thread, over data it is
 * about to copy anyway.
 */
static int restore_verify_timed(struct gpu_job *job, const struct staging_slot *s, uint64_t *ns)
{
	uint32_t crc, expected = s->crc;
	char name[96];

	if (s->level)
		snprintf(name, sizeof(name), "%s (parent level %" PRIu32 ")",
			 job->chain.name[s->level - 1], s->level);
	else
		bo_job_image_name(name, sizeof(name), job, "img");
	crc = slot_checksum_timed(job, s, NULL, ns);
	if (crc != expected)
		return bo_job_fail(job, -EBADMSG,
				   "gpu %" PRIu32 ": BO %" PRIu32 " offset 0x%" PRIx64
				   ": checksum mismatch in %s (chunk at 0x%" PRIx64
				   ", crc32 0x%08" PRIx32 ", expected 0x%08" PRIx32 ")",
				   job->gpu->gpu_id, s->bo_index, s->bo_off, name, s->file_off, crc,
				   expected);
	return 0;
}

int bo_job_restore_verify(struct gpu_job *job, const struct staging_slot *s)
{
	return restore_verify_timed(job, s, &job->checksum_ns);
}

static int restore_drain(struct gpu_job *job, struct staging_slot *s)
{
	int ret = bo_job_restore_verify(job, s);

	if (!ret)
		ret = bo_switch(job, s->bo_index);
	if (ret)
		return ret;
	if (s->zero && job->engine->ops->zero)
		ret = job->engine->ops->zero(job->cur.handle, s->bo_off, s->len);
	else
		ret = job->engine->ops->write(job->cur.handle, s->bo_off,
					      s->zero ? job->zeros : s->buf, s->len);
	if (ret)
		return bo_job_fail(job, ret,
				   "gpu %" PRIu32 ": BO %" PRIu32 " offset 0x%" PRIx64
				   ": copy engine write: %s",
				   job->gpu->gpu_id, s->bo_index, s->bo_off,
				   engine_error(job, ret));
	return 0;
}

/* Called by the consumer, and by a dump's producer for in-place chunks. */
static void report_progress(struct gpu_job *job, uint32_t len)
{
	const struct bo_stream_config *cfg = job->cfg;
	uint64_t step = cfg->progress_step ? cfg->progress_step : BO_STREAM_DEFAULT_PROGRESS_STEP;
	uint64_t done;
	bool due;

	if (!cfg->progress)
		return;
	pthread_mutex_lock(&job->progress_lock);
	done = job->done_bytes += len;
	due = done >= job->next_progress || done == job->data_bytes;
	while (due && job->next_progress <= done && job->next_progress <= UINT64_MAX - step)
		job->next_progress += step;
	pthread_mutex_unlock(&job->progress_lock);
	if (due)
		cfg->progress(cfg->progress_arg, job->gpu->gpu_id, done, job->data_bytes);
}

/* ---- threads ---------------------------------------------------------------------------- */

/* "amdgpu-<side>-<gpu_id>" (15 bytes at most): what `top -H` and perf show. */
static void name_thread(const struct gpu_job *job, bool producer)
{
	bool engine_side = producer == (job->dir == STREAM_DUMP);
	char name[16];

	snprintf(name, sizeof(name), "amdgpu-%s%" PRIu32, engine_side ? "cp" : "io",
		 job->gpu->gpu_id);
	pthread_setname_np(pthread_self(), name);
}

/*
 * A chunk of a BO in host memory, all on the producer, through the engine's
 * view of the BO: a dump checksums and writes it from there, a restore reads
 * the file straight into it and checks it there. Saves the staging copy and
 * the hand-over to the other thread (the chunk is still in this core's
 * cache); pwrite() and pread() reach a dma-buf mapping as any memory
 * (O_DIRECT could not, hence not with it). The producer opens such BOs in a
 * slot of its own, in_place_bo: a restore's consumer has `cur` meanwhile.
 */
static bool chunk_in_place(const struct gpu_job *job, const struct staging_slot *pos)
{
	return job->in_place && job->direct_fd < 0 && job->gpu->bos[pos->bo_index].host_memory;
}

/* The chunk's work once in view: the dump's zero test, entry and write; the
 * restore's read and check. The write and the check are the other side's work. */
static int in_place_work(struct gpu_job *job, struct staging_slot *s)
{
	uint64_t start;
	int ret;

	if (job->dir == STREAM_DUMP) {
		s->zero = is_zero(s->buf, s->len);
		ret = dump_entry(job, s);
		start = bo_job_now_ns();
		if (!ret)
			ret = dump_drain(job, s);
	} else {
		ret = bo_job_restore_fill(job, s);
		start = bo_job_now_ns();
		if (!ret && s->zero)
			memset(s->buf, 0, s->len); /* a hole: zeros (their checksum is known) */
		if (!ret) /* the producer's own counter: the consumer may be timing ring chunks */
			ret = restore_verify_timed(job, s, &job->in_place_checksum_ns);
	}
	job->in_place_other_ns += bo_job_now_ns() - start;
	return ret;
}

static int chunk_in_place_run(struct gpu_job *job, struct staging_slot *s)
{
	const struct bo_copy_engine_ops *ops = job->engine->ops;
	void *p = NULL;
	int ret, end;

	ret = bo_switch_slot(job, &job->in_place_bo, s->bo_index);
	if (ret)
		return ret;
	ret = ops->view(job->in_place_bo.handle, s->bo_off, s->len, &p);
	if (ret)
		return bo_job_fail(job, ret,
				   "gpu %" PRIu32 ": BO %" PRIu32 " offset 0x%" PRIx64
				   ": copy engine view: %s",
				   job->gpu->gpu_id, s->bo_index, s->bo_off,
				   engine_error(job, ret));
	s->buf = p;
	ret = in_place_work(job, s);
	end = ops->view_end(job->in_place_bo.handle);
	if (!ret && end)
		ret = bo_job_fail(job, end,
				  "gpu %" PRIu32 ": BO %" PRIu32 " offset 0x%" PRIx64
				  ": copy engine view end: %s",
				  job->gpu->gpu_id, s->bo_index, s->bo_off, engine_error(job, end));
	if (!ret) {
		job->in_place_bytes += s->len;
		report_progress(job, s->len);
	}
	return ret;
}

static void *producer_main(void *arg)
{
	struct gpu_job *job = arg;
	uint64_t *busy = job->dir == STREAM_DUMP ? &job->engine_ns : &job->file_ns;
	struct chunk_cursor c = {0};
	struct staging_slot pos, *s;
	uint64_t start;
	int ret;

	thread_own_fs(); /* common/thread_fs.h */
	name_thread(job, true);
	while (bo_job_cursor_next(job, &c, &pos)) {
		if (chunk_in_place(job, &pos)) {
			uint64_t other_before = job->in_place_other_ns;

			start = bo_job_now_ns();
			ret = chunk_in_place_run(job, &pos);
			*busy += bo_job_now_ns() - start - (job->in_place_other_ns - other_before);
			if (ret || job_error(job))
				break;
			continue;
		}
		s = ring_claim(&job->ring);
		if (!s)
			break;
		s->len = pos.len;
		s->bo_index = pos.bo_index;
		s->bo_off = pos.bo_off;
		s->file_off = pos.file_off;
		s->chunk_index = pos.chunk_index;
		start = bo_job_now_ns();
		ret = job->dir == STREAM_DUMP ? dump_fill(job, s) : bo_job_restore_fill(job, s);
		*busy += bo_job_now_ns() - start;
		if (ret)
			break;
		ring_publish(&job->ring);
	}
	if (job->dir == STREAM_DUMP)
		bo_close(job);
	bo_close_slot(job, &job->in_place_bo);
	ring_finish(&job->ring);
	job->producer_end_ns = bo_job_now_ns();
	return NULL;
}

static int write_index(struct gpu_job *job);

static void *consumer_main(void *arg)
{
	struct gpu_job *job = arg;
	uint64_t *busy = job->dir == STREAM_DUMP ? &job->file_ns : &job->engine_ns;
	struct staging_slot *s;
	uint64_t start;
	int ret;

	thread_own_fs(); /* common/thread_fs.h */
	name_thread(job, false);
	while ((s = ring_take(&job->ring))) {
		start = bo_job_now_ns();
		ret = job->dir == STREAM_DUMP ? dump_drain(job, s) : restore_drain(job, s);
		*busy += bo_job_now_ns() - start;
		if (ret)
			break;
		report_progress(job, s->len);
		ring_release(&job->ring);
	}
	if (job->dir == STREAM_RESTORE)
		bo_close(job);
	else if (!job_error(job))
		write_index(job);
	job->consumer_end_ns = bo_job_now_ns();
	return NULL;
}

/* Starts both threads; on failure stops and joins what was started. */
int bo_job_start(struct gpu_job *job)
{
	int ret;

	ret = pthread_create(&job->producer, NULL, producer_main, job);
	if (ret)
		return bo_job_fail(job, -ret, "gpu %" PRIu32 ": cannot start a thread: %s",
				   job->gpu->gpu_id, strerror(ret));
	job->producer_running = true;
	ret = pthread_create(&job->consumer, NULL, consumer_main, job);
	if (ret)
		return bo_job_fail(job, -ret, "gpu %" PRIu32 ": cannot start a thread: %s",
				   job->gpu->gpu_id, strerror(ret));
	job->consumer_running = true;
	return 0;
}

void bo_job_join(struct gpu_job *job)
{
	if (job->producer_running)
		pthread_join(job->producer, NULL);
	if (job->consumer_running)
		pthread_join(job->consumer, NULL);
	job->producer_running = job->consumer_running = false;
}

/* ---- index file (bo_index.c) ---------------------------------------------------------- */

/* Consumer thread of a dump, after the last chunk: index, then durability. */
static int write_index(struct gpu_job *job)
{
	char name[64], msg[ERR_LEN];
	struct bo_index_layout l;
	int ret;

	bo_job_image_name(name, sizeof(name), job, "idx");
	l = job_index(job, name);
	l.ancestor_count = job->max_level;
	memcpy(l.ancestors, job->ancestors.ancestors, sizeof(l.ancestors));
	ret = bo_index_write(job->index_fd, &l, job->entries, msg, sizeof(msg));
	if (ret)
		return bo_job_fail(job, ret, "%s", msg);
	if (job->cfg->sync && (fdatasync(job->data_fd) || fdatasync(job->index_fd)))
		return bo_job_fail(job, -errno, "gpu %" PRIu32 ": writing %s: %s", job->gpu->gpu_id,
				   name, strerror(errno));
	return 0;
}

/* The index header: chunk size and layout, the index file's size. */
static int index_read_header(struct gpu_job *job)
{
	char name[64], msg[ERR_LEN];
	struct bo_index_layout l;
	int ret;

	bo_job_image_name(name, sizeof(name), job, "idx");
	l = job_index(job, name);
	ret = bo_index_read_header(job->index_fd, &l, msg, sizeof(msg));
	if (ret)
		return bo_job_fail(job, ret, "%s", msg);
	job->chunk_size = l.chunk_size;
	job->data_bytes = l.data_bytes;
	job->chunk_count = l.chunk_count;
	/* version and ancestors too: index_check() goes on from here */
	job->ancestors = l;
	job->ancestors.bos = NULL;
	job->ancestors.name = NULL;
	return 0;
}

/* After index_read_header(): the whole index, streamed; then its entries are read on demand. */
static int index_check(struct gpu_job *job)
{
	char name[64], msg[ERR_LEN];
	struct bo_index_layout l;
	int ret;

	bo_job_image_name(name, sizeof(name), job, "idx");
	l = job->ancestors; /* as index_read_header() read it */
	l.bos = job->gpu->bos;
	l.name = name;
	ret = bo_index_check(job->index_fd, &l, msg, sizeof(msg));
	ret = ret ?: bo_chain_open(job->cfg->dir_fd, &l, &job->chain, msg, sizeof(msg));
	if (ret)
		return bo_job_fail(job, ret, "%s", msg);
	job->ancestors = l;
	job->ancestors.bos = NULL;
	job->ancestors.name = NULL;
	job->reader = malloc(sizeof(*job->reader));
	if (!job->reader)
		return bo_job_fail(job, -ENOMEM, "gpu %" PRIu32 ": no memory", job->gpu->gpu_id);
	bo_index_reader_init(job->reader, job->index_fd, &l);
	return 0;
}

/* ---- per-GPU setup ---------------------------------------------------------------------- */

static int open_image(struct gpu_job *job, const char *ext, int *fd)
{
	char name[64], why[128];

	bo_job_image_name(name, sizeof(name), job, ext);
	if (job->dir == STREAM_DUMP) {
		*fd = openat(job->cfg->dir_fd, name,
			     O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		return *fd < 0 ? job_fail_errno(job, "", name) : 0;
	}
	/* a FIFO, device or link in the image directory: refused, never a blocked open */
	*fd = regfile_open(job->cfg->dir_fd, name, why, sizeof(why));
	if (*fd < 0)
		return bo_job_fail(job, *fd, "gpu %" PRIu32 ": %s: %s", job->gpu->gpu_id, name,
				   why);
	return 0;
}

static int check_data_size(struct gpu_job *job)
{
	struct stat st;
	char name[64];

	bo_job_image_name(name, sizeof(name), job, "img");
	if (fstat(job->data_fd, &st))
		return job_fail_errno(job, "", name);
	if ((uint64_t)st.st_size != job->data_bytes)
		return bo_job_fail(job, -EINVAL,
				   "gpu %" PRIu32 ": %s is %s: %jd bytes, the index says %" PRIu64,
				   job->gpu->gpu_id, name,
				   (uint64_t)st.st_size < job->data_bytes ? "truncated"
									  : "too long",
				   (intmax_t)st.st_size, job->data_bytes);
	return 0;
}

/* The parent's files of this GPU, if usable; else the GPU is written whole, saying why. */
static void open_parent(struct gpu_job *job)
{
	struct bo_stream_gpu *g = job->gpu;
	char msg[ERR_LEN];
	int ret = bo_parent_open(job->cfg->parent_dir_fd, job->cfg->image_id, g->gpu_id,
				 job->chunk_size, &job->parent, msg, sizeof(msg));

	if (ret) {
		snprintf(g->parent_note, sizeof(g->parent_note), "%s", msg);
		return;
	}
	bo_parent_ancestors(job->parent, &job->ancestors);
}

/*
 * With BO_STREAM_DIRECT_ENV=1, the data file reopened with O_DIRECT (through
 * /proc/self/fd: the same file, no second lookup of its name). Not
 * available is not an error: the dump then writes through the page cache.
 */
static void open_direct(struct gpu_job *job)
{
	const char *env = getenv(BO_STREAM_DIRECT_ENV);
	char path[64];

	job->direct_fd = -1;
	job->gpu->direct_io = false;
	if (!env || strcmp(env, "1"))
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", job->data_fd);
	job->direct_fd = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
	job->gpu->direct_io = job->direct_fd >= 0;
}

static int job_prepare_dump(struct gpu_job *job)
{
	int ret = job_layout(job);

	if (ret)
		return ret;
	job->entries = calloc(job->chunk_count ? job->chunk_count : 1, sizeof(*job->entries));
	if (!job->entries)
		return bo_job_fail(job, -ENOMEM, "gpu %" PRIu32 ": no memory", job->gpu->gpu_id);
	if (job->cfg->has_parent)
		open_parent(job);
	ret = open_image(job, "img", &job->data_fd);
	if (ret)
		return ret;
	job->created_data = true;
	open_direct(job);
	ret = open_image(job, "idx", &job->index_fd);
	if (ret)
		return ret;
	job->created_index = true;
	/* Sets the size up front: a file with holes is not mistaken for a whole one. */
	if (ftruncate(job->data_fd, (off_t)job->data_bytes))
		return job_fail_errno(job, "sizing", "the image");
	return 0;
}

/* Cheap checks first (sizes), the index's checksum streamed last. */
int bo_job_prepare_restore(struct gpu_job *job)
{
	int ret = open_image(job, "idx", &job->index_fd);

	if (!ret)
		ret = index_read_header(job);
	if (!ret)
		ret = open_image(job, "img", &job->data_fd);
	if (!ret)
		ret = check_data_size(job);
	if (!ret)
		ret = index_check(job);
	return ret;
}

int bo_job_prepare(struct gpu_job *job)
{
	int ret = job->dir == STREAM_DUMP ? job_prepare_dump(job) : bo_job_prepare_restore(job);
	uint32_t depth = job->cfg->ring_depth ? job->cfg->ring_depth : BO_STREAM_DEFAULT_DEPTH;

	if (ret)
		return ret;
	job->in_place = job->engine->ops->view && job->engine->ops->view_end;
	zero_checksum(job, job->chunk_size); /* known before both threads may ask */
	if (ring_alloc(&job->ring, depth, job->chunk_size))
		return bo_job_fail(job, -ENOMEM,
				   "gpu %" PRIu32 ": no memory for %" PRIu32
				   " staging chunks of %" PRIu32 " bytes",
				   job->gpu->gpu_id, depth, job->chunk_size);
	return 0;
}

void bo_job_free(struct gpu_job *job)
{
	free(job->entries);
	job->entries = NULL;
	free(job->reader);
	job->reader = NULL;
	bo_parent_close(job->parent);
	job->parent = NULL;
	bo_chain_close(&job->chain);
	bo_job_zeros_unmap(job->zeros, job->chunk_size);
	job->zeros = NULL;
}
