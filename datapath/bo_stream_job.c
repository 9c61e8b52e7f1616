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
#include "datapath/bo_index.h"
#include "common/regfile.h"
#include "datapath/bo_stream_files.h"
#include "datapath/bo_stream_types.h"
#include "datapath/staging_ring.h"
#include "datapath/bo_stream_job.h"
#include "common/thread_fs.h"

#define ERR_LEN RING_MSG_LEN

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t bo_job_now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t bo_job_thread_cpu_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
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

void bo_job_close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
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
int bo_job_layout(struct gpu_job *job)
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
		if (bo_chunk_in_place(job, &pos)) {
			uint64_t file_before = job->in_place_file_ns;

			start = bo_job_now_ns();
			ret = bo_chunk_in_place_run(job, &pos);
			*busy += bo_job_now_ns() - start - (job->in_place_file_ns - file_before);
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
		ret = job->dir == STREAM_DUMP ? bo_chunk_dump_fill(job, s)
					      : bo_job_restore_fill(job, s);
		*busy += bo_job_now_ns() - start;
		if (ret)
			break;
		ring_publish(&job->ring);
	}
	if (job->dir == STREAM_DUMP)
		bo_job_close_bo(job);
	else if (job->seq && !job_error(job))
		bo_job_seq_end(job);
	ring_finish(&job->ring);
	job->producer_end_ns = bo_job_now_ns();
	job->producer_cpu_ns = bo_job_thread_cpu_ns();
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
		ret = job->dir == STREAM_DUMP ? bo_chunk_dump_drain(job, s)
					      : bo_chunk_restore_drain(job, s);
		*busy += bo_job_now_ns() - start;
		if (ret)
			break;
		bo_job_report_progress(job, s->len);
		ring_release(&job->ring);
	}
	if (job->dir == STREAM_RESTORE)
		bo_job_close_bo(job);
	else if (!job_error(job))
		job->seq ? bo_job_seq_finish(job) : write_index(job);
	job->consumer_end_ns = bo_job_now_ns();
	job->consumer_cpu_ns = bo_job_thread_cpu_ns();
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
	job->sum_crc64 = bo_index_verifies_crc64(l.version);
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

/* The size below which AUTO keeps a data file in the page cache. */
static uint64_t direct_min(const struct bo_stream_config *cfg)
{
	return cfg->direct_min ? cfg->direct_min : BO_STREAM_DIRECT_MIN;
}

/*
 * Small files are written as fast buffered, and their page cache is small;
 * on tmpfs the page cache is the file.
 */
bool bo_stream_auto_buffered(int fd, uint64_t bytes, uint64_t min, char *why, size_t len)
{
	if (!min)
		min = BO_STREAM_DIRECT_MIN;
	if (bytes < min)
		snprintf(why, len, "an image under %" PRIu64 " MiB", min >> 20);
	else if (direct_io_in_memory(fd))
		snprintf(why, len, "the file is in memory (tmpfs): O_DIRECT is a copy there too");
	else
		return false;
	return true;
}

/*
 * The data file reopened with O_DIRECT (through /proc/self/fd: the same
 * file, no second lookup of its name), as cfg->write_mode asks. Not
 * available is not an error: the dump then writes through the page cache,
 * write_note saying why.
 */
static void open_direct(struct gpu_job *job)
{
	struct bo_stream_gpu *g = job->gpu;
	char path[64];

	job->direct_fd = -1;
	g->direct_io = false;
	g->write_note[0] = 0;
	if (job->cfg->write_mode == BO_WRITE_BUFFERED) {
		snprintf(g->write_note, sizeof(g->write_note), "buffered writes asked");
		return;
	}
	if (job->cfg->write_mode == BO_WRITE_AUTO &&
	    bo_stream_auto_buffered(job->data_fd, job->data_bytes, job->cfg->direct_min,
				    g->write_note, sizeof(g->write_note)))
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", job->data_fd);
	job->direct_fd = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
	g->direct_io = job->direct_fd >= 0;
	if (!g->direct_io)
		snprintf(g->write_note, sizeof(g->write_note),
			 "the file system refuses O_DIRECT (%s)", strerror(errno));
}

static int job_prepare_dump(struct gpu_job *job)
{
	int ret = bo_job_layout(job);

	if (ret)
		return ret;
	job->sum_crc64 = true; /* the index written is version 3 */
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

/*
 * The restore's data file for O_DIRECT reads, as cfg->read_mode asks and
 * the file system allows; else buffered, the reason in read_note. Not an
 * error either way.
 */
static void open_direct_read(struct gpu_job *job)
{
	const struct bo_stream_config *cfg = job->cfg;
	struct bo_stream_gpu *g = job->gpu;
	uint64_t min = direct_min(cfg);

	g->direct_read = false;
	if (cfg->read_mode == BO_READ_BUFFERED) {
		snprintf(g->read_note, sizeof(g->read_note), "buffered reads asked");
		return;
	}
	if (direct_read_open(&job->direct, job->data_fd, job->data_bytes,
			     cfg->read_mode == BO_READ_DIRECT ? 0 : min, g->read_note,
			     sizeof(g->read_note)))
		return;
	job->direct_open = true;
	g->direct_read = true;
	g->read_note[0] = 0;
}

void bo_job_direct_read_off(struct gpu_job *job, const char *why)
{
	if (job->direct_open)
		direct_read_close(&job->direct);
	job->direct_open = false;
	job->gpu->direct_read = false;
	snprintf(job->gpu->read_note, sizeof(job->gpu->read_note), "%s", why);
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

/* Streamed images (cfg->stream_open): one stream per GPU, no index file. */
static int job_prepare_files(struct gpu_job *job)
{
	job->seq = job->cfg->stream_open != NULL;
	if (job->dir == STREAM_DUMP)
		return job->seq ? bo_job_seq_prepare_dump(job) : job_prepare_dump(job);
	return job->seq ? bo_job_seq_prepare_restore(job) : bo_job_prepare_restore(job);
}

int bo_job_prepare(struct gpu_job *job)
{
	int ret = job_prepare_files(job);
	uint32_t depth = job->cfg->ring_depth ? job->cfg->ring_depth : BO_STREAM_DEFAULT_DEPTH;

	if (ret)
		return ret;
	if (ring_alloc(&job->ring, depth, job->chunk_size))
		return bo_job_fail(job, -ENOMEM,
				   "gpu %" PRIu32 ": no memory for %" PRIu32
				   " staging chunks of %" PRIu32 " bytes",
				   job->gpu->gpu_id, depth, job->chunk_size);
	if (job->dir == STREAM_RESTORE && !job->seq)
		open_direct_read(job);
	else if (job->dir == STREAM_RESTORE)
		snprintf(job->gpu->read_note, sizeof(job->gpu->read_note),
			 "streamed: read from the image stream");
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
	if (job->direct_open)
		direct_read_close(&job->direct);
	job->direct_open = false;
	bo_job_seq_free(job);
}
