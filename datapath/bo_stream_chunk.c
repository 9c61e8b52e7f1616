// SPDX-License-Identifier: MIT
/*
 * What happens to one chunk of a BO stream (see bo_stream_job.h): its
 * checksums, the BO side (the open BO, engine errors), the dump's and the
 * restore's stages on either thread, and a dump's chunks read in place.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/fullio.h"
#include "datapath/bo_index.h"
#include "datapath/bo_stream_types.h"
#include "datapath/bo_stream_job.h"
#include "datapath/staging_ring.h"

/* ---- checksums ---------------------------------------------------------------------- */

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

/*
 * The job's checksum of len bytes: the CRC-64 where the index (or, for a
 * dump, the index written) verifies by it, else the CRC-32 of a version 1
 * or 2 image being restored.
 */
static uint64_t job_sum(const struct gpu_job *job, uint64_t sum, const void *buf, size_t len)
{
	return job->sum_crc64 ? bo_index_crc64(sum, buf, len)
			      : bo_index_crc32((uint32_t)sum, buf, len);
}

/* The checksum of `len` zero bytes, from one page of zeros. */
static uint64_t zeros_sum(const struct gpu_job *job, uint32_t len)
{
	uint64_t sum = 0;
	uint32_t n, left;

	for (left = len; left; left -= n) {
		n = left < FILE_PAGE ? left : FILE_PAGE;
		sum = job_sum(job, sum, zero_page, n);
	}
	return sum;
}

/* The same, without a pass over a zero chunk: a full chunk's sum is
 * computed once per GPU. Only one thread of a job asks (the dump's
 * producer, the restore's consumer). */
static uint64_t zero_checksum(struct gpu_job *job, uint32_t len)
{
	if (len != job->chunk_size)
		return zeros_sum(job, len);
	if (!job->zero_sum_known) {
		job->zero_sum = zeros_sum(job, len);
		job->zero_sum_known = true;
	}
	return job->zero_sum;
}

/* A slot's checksum, its CPU time counted (bo_stream_times.checksum_ns). */
static uint64_t slot_checksum(struct gpu_job *job, const struct staging_slot *s)
{
	uint64_t start = bo_job_thread_cpu_ns(), sum;

	sum = s->zero ? zero_checksum(job, s->len) : job_sum(job, 0, s->buf, s->len);
	job->checksum_ns += bo_job_thread_cpu_ns() - start;
	return sum;
}

/* ---- the BO side ----------------------------------------------------------------------- */

/* An engine error in words: the engine's own, else strerror's. */
static const char *engine_error(const struct gpu_job *job, int ret)
{
	const char *why = job->engine->ops->explain ? job->engine->ops->explain(ret) : NULL;

	return why ? why : strerror(-ret);
}

/* A failed engine call on the slot's chunk: "gpu G: BO B offset 0xO: copy engine OP: why". */
static int engine_fail(struct gpu_job *job, const struct staging_slot *s, const char *op, int err)
{
	return bo_job_fail(job, err,
			   "gpu %" PRIu32 ": BO %" PRIu32 " offset 0x%" PRIx64
			   ": copy engine %s: %s",
			   job->gpu->gpu_id, s->bo_index, s->bo_off, op, engine_error(job, err));
}

void bo_job_close_bo(struct gpu_job *job)
{
	if (job->cur.handle) {
		job->engine->ops->close_bo(job->cur.handle);
		bo_job_close_fd(&job->gpu->bos[job->cur.index].dmabuf_fd);
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
	bo_job_close_bo(job);
	if (bo->dmabuf_fd < 0)
		return bo_job_fail(job, -EBADF, "gpu %" PRIu32 ": BO %" PRIu32 " has no dma-buf fd",
				   job->gpu->gpu_id, index);
	ret = job->engine->ops->open_bo(job->engine, bo->dmabuf_fd, bo->size, access,
					&job->cur.handle);
	if (ret) {
		job->cur.handle = NULL;
		return bo_job_fail(job, ret,
				   "gpu %" PRIu32 ": BO %" PRIu32 ": copy engine open: %s",
				   job->gpu->gpu_id, index, engine_error(job, ret));
	}
	job->cur.index = index;
	return 0;
}

/* ---- pipeline stages -------------------------------------------------------------------- */

/*
 * The chunk's index entry: here, or (incremental) where the parent has the
 * same bytes: the same CRC-64 at the same offset of the same BO. Zero
 * chunks stay here: a hole costs nothing.
 */
static int dump_entry(struct gpu_job *job, struct staging_slot *s)
{
	struct bo_chunk_entry *e = &job->entries[s->chunk_index], pe;
	const struct bo_stream_bo *bo = &job->gpu->bos[s->bo_index];
	int ret;

	e->crc64 = slot_checksum(job, s); /* version 3: no CRC-32 (the writer puts 0) */
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
	if (ret || pe.crc64 != e->crc64)
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

int bo_chunk_dump_fill(struct gpu_job *job, struct staging_slot *s)
{
	int ret = bo_switch(job, s->bo_index);

	if (ret)
		return ret;
	ret = job->engine->ops->read(job->cur.handle, s->bo_off, s->buf, s->len);
	if (ret)
		return engine_fail(job, s, "read", ret);
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
		snprintf(job->gpu->write_note, sizeof(job->gpu->write_note),
			 "the file system refused an O_DIRECT write (EINVAL)");
	}
	return pwrite_full(job->data_fd, buf, len, off);
}

/*
 * Writes the chunk's non-zero pages only: the data file was sized up front,
 * so the zero pages stay holes, which read back as zeros (VRAM is often
 * mostly zero; the image then costs what was written, not the BO size).
 */
int bo_chunk_dump_drain(struct gpu_job *job, struct staging_slot *s)
{
	size_t off = 0, len;
	char name[64];
	int ret = 0;

	if (job->seq)
		return bo_job_seq_put(job, s);
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
uint8_t *bo_job_zeros_map(uint32_t chunk_size)
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

/*
 * The chunk from this image's data file: O_DIRECT into the staging buffer
 * where the reader is open; a file system that takes O_DIRECT at open but
 * refuses the read (EINVAL) makes this and the rest buffered.
 */
static int restore_read(struct gpu_job *job, struct staging_slot *s)
{
	int ret;

	if (job->direct_open) {
		ret = direct_read(&job->direct, s->buf, s->len, s->file_off);
		if (ret != -EINVAL)
			return ret;
		bo_job_direct_read_off(job, "the file system refused an O_DIRECT read (EINVAL)");
	}
	return pread_full(job->data_fd, s->buf, s->len, s->file_off);
}

int bo_job_restore_fill(struct gpu_job *job, struct staging_slot *s)
{
	struct bo_chunk_entry e;
	char name[64];
	int ret;

	if (job->seq)
		return bo_job_seq_fill(job, s);
	ret = bo_index_entry_get(job->reader, s->chunk_index, &e);
	if (ret)
		return bo_job_fail(job, ret,
				   "gpu %" PRIu32 ": reading the entry of chunk %" PRIu64
				   " from the index: %s",
				   job->gpu->gpu_id, s->chunk_index, strerror(-ret));
	s->sum = job->sum_crc64 ? e.crc64 : e.crc32;
	s->level = e.level;
	s->src_off = e.offset;
	if (s->level)
		return restore_fill_ancestor(job, s);
	/* a hole needs no read, no CRC pass, no copy: zeros and their checksum */
	s->zero = chunk_is_hole(job, s);
	if (!job->engine->ops->zero) {
		if (s->zero && !job->zeros)
			job->zeros = bo_job_zeros_map(job->chunk_size);
		if (!job->zeros)
			s->zero = false; /* no memory for it: read the zeros */
	}
	if (!s->zero)
		ret = restore_read(job, s);
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
 * measures), and the checksum pass runs on the other thread, over data it is
 * about to copy anyway.
 */
int bo_job_restore_verify(struct gpu_job *job, const struct staging_slot *s)
{
	uint64_t sum, expected = s->sum;
	const char *kind = job->sum_crc64 ? "crc64" : "crc32";
	int digits = job->sum_crc64 ? 16 : 8;
	char name[96];

	if (job->seq && s->zero)
		return 0; /* a zero record: no bytes came, its head is in the end record's CRC */
	if (s->level)
		snprintf(name, sizeof(name), "%s (parent level %" PRIu32 ")",
			 job->chain.name[s->level - 1], s->level);
	else
		bo_job_image_name(name, sizeof(name), job, job->seq ? "seq" : "img");
	sum = slot_checksum(job, s);
	if (sum != expected)
		return bo_job_fail(job, -EBADMSG,
				   "gpu %" PRIu32 ": BO %" PRIu32 " offset 0x%" PRIx64
				   ": checksum mismatch in %s (chunk at 0x%" PRIx64
				   ", %s 0x%0*" PRIx64 ", expected 0x%0*" PRIx64 ")",
				   job->gpu->gpu_id, s->bo_index, s->bo_off, name, s->file_off,
				   kind, digits, sum, digits, expected);
	return 0;
}

int bo_chunk_restore_drain(struct gpu_job *job, struct staging_slot *s)
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
		return engine_fail(job, s, "write", ret);
	return 0;
}

/* Called by the consumer, and by a dump's producer for in-place chunks. */
void bo_job_report_progress(struct gpu_job *job, uint32_t len)
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

/* ---- in place ----------------------------------------------------------------------------- */

/*
 * A dump's chunk of a BO in host memory, all on the producer, through the
 * engine's view of the BO: checksummed and written from there. Saves the
 * staging copy and the hand-over to the other thread (the chunk is still in
 * this core's cache when it is written); pwrite() copies from a dma-buf
 * mapping as from any memory (O_DIRECT could not, hence not with it).
 */
bool bo_chunk_in_place(const struct gpu_job *job, const struct staging_slot *pos)
{
	const struct bo_copy_engine_ops *ops = job->engine->ops;

	/* not streamed: its chunks would pass those still in the ring */
	return job->dir == STREAM_DUMP && !job->seq && ops->view && ops->view_end &&
	       job->direct_fd < 0 && job->gpu->bos[pos->bo_index].host_memory;
}

/* The in-place chunk's write (the file side's work, timed apart). */
static int in_place_write(struct gpu_job *job, struct staging_slot *s)
{
	uint64_t start = bo_job_now_ns();
	int ret = bo_chunk_dump_drain(job, s);

	job->in_place_file_ns += bo_job_now_ns() - start;
	return ret;
}

/*
 * The chunk once in view: zero test, write, then checksums and entry, from
 * the cache the write has just filled (the CRC passes no longer fetch from
 * memory what the write fetches anyway). An incremental dump must know the
 * checksums first: a chunk its parent holds is not written.
 */
static int in_place_work(struct gpu_job *job, struct staging_slot *s)
{
	int ret;

	s->zero = is_zero(s->buf, s->len);
	if (job->parent) {
		ret = dump_entry(job, s);
		return ret ? ret : in_place_write(job, s);
	}
	s->level = 0;
	ret = in_place_write(job, s);
	return ret ? ret : dump_entry(job, s);
}

int bo_chunk_in_place_run(struct gpu_job *job, struct staging_slot *s)
{
	const struct bo_copy_engine_ops *ops = job->engine->ops;
	const void *p = NULL;
	int ret, end;

	ret = bo_switch(job, s->bo_index);
	if (ret)
		return ret;
	ret = ops->view(job->cur.handle, s->bo_off, s->len, &p);
	if (ret)
		return engine_fail(job, s, "view", ret);
	s->buf = (uint8_t *)p; /* only read from here on */
	ret = in_place_work(job, s);
	end = ops->view_end(job->cur.handle);
	if (!ret && end)
		ret = engine_fail(job, s, "view end", end);
	if (!ret) {
		job->in_place_bytes += s->len;
		bo_job_report_progress(job, s->len);
	}
	return ret;
}
