// SPDX-License-Identifier: MIT
/*
 * BO contents <-> image files (see bo_stream.h for the contract and the file
 * format): the GPUs of one call run in parallel, each its own pipeline
 * (bo_stream_job.c: a producer and a consumer thread over a bounded staging
 * ring); this file checks the call, runs the pipelines, collects the first
 * error, removes a failed dump's files and closes every fd left; and checks
 * image files without BOs (bo_stream_verify(), bo_stream_check_files()).
 */
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
#include "datapath/bo_stream.h"
#include "datapath/staging_ring.h"
#include "datapath/bo_stream_job.h"

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

	if (!cfg || (cfg->dir_fd < 0 && !cfg->stream_open) || (st->gpu_count && !st->gpus))
		return errmsg_set(err, errlen, -EINVAL, "bo_stream: no image directory or no GPUs");
	if (cfg->has_parent && cfg->stream_open)
		return errmsg_set(
			err, errlen, -EINVAL,
			"bo_stream: an incremental dump (a parent image) is not streamed: "
			"dump without the parent, or without streaming");
	if (cfg->chunk_size % FILE_PAGE || cfg->chunk_size > BO_STREAM_MAX_CHUNK)
		return errmsg_set(err, errlen, -EINVAL, "bo_stream: bad chunk size %" PRIu32,
				  cfg->chunk_size);
	if (cfg->has_parent && cfg->parent_dir_fd < 0)
		return errmsg_set(err, errlen, -EINVAL, "bo_stream: no parent image directory");
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
		st->gpus[i].parent_bytes = st->gpus[i].written_bytes = st->gpus[i].zero_bytes = 0;
		st->gpus[i].in_place_bytes = 0;
		st->gpus[i].parent_note[0] = 0;
		st->gpus[i].direct_read = false;
		st->gpus[i].read_note[0] = 0;
		st->gpus[i].direct_io = false;
		st->gpus[i].write_note[0] = 0;
		if (ring_init(&job->ring))
			return errmsg_set(err, errlen, -ENOMEM, "bo_stream: no memory");
		if (pthread_mutex_init(&job->progress_lock, NULL)) {
			ring_destroy(&job->ring);
			return errmsg_set(err, errlen, -ENOMEM, "bo_stream: no memory");
		}
		st->jobs_ready++;
		job->cfg = st->cfg;
		job->gpu = &st->gpus[i];
		job->engine = job->gpu->engine ? job->gpu->engine : &bo_copy_engine_cpu;
		job->dir = st->dir;
		job->chunk_size =
			st->cfg->chunk_size ? st->cfg->chunk_size : BO_STREAM_DEFAULT_CHUNK;
		job->data_fd = job->index_fd = job->direct_fd = -1;
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
		ret = bo_job_prepare(&st->jobs[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* Runs the pipelines of GPUs first..last-1 in parallel; returns once all threads are joined. */
static void stream_run(struct stream *st, uint32_t first, uint32_t last)
{
	uint64_t start = bo_job_now_ns();
	uint32_t i;

	for (i = first; i < last; i++)
		if (bo_job_start(&st->jobs[i]))
			break;
	for (i = first; i < last; i++) {
		struct gpu_job *job = &st->jobs[i];
		uint64_t end;

		bo_job_join(job);
		end = job->producer_end_ns > job->consumer_end_ns ? job->producer_end_ns
								  : job->consumer_end_ns;
		st->gpus[i].times = (struct bo_stream_times){
			.wall_ns = end > start ? end - start : 0,
			.engine_ns = job->engine_ns,
			.file_ns = job->file_ns + job->in_place_file_ns,
			.checksum_ns = job->checksum_ns,
			.cpu_ns = job->producer_cpu_ns + job->consumer_cpu_ns};
		st->gpus[i].parent_bytes = job->parent_bytes;
		st->gpus[i].written_bytes = job->written_bytes;
		st->gpus[i].zero_bytes = job->zero_bytes;
		st->gpus[i].in_place_bytes = job->in_place_bytes;
	}
}

/*
 * Every GPU's pipeline. A streamed restore runs them one after the other:
 * criu-image-streamer serves one image at a time, writing it whole into
 * its pipe before it reads the next request, so a GPU's stream is opened
 * once the one before has been read to its end.
 */
static void stream_go(struct stream *st)
{
	uint32_t i;

	if (st->dir != STREAM_RESTORE || !st->cfg->stream_open) {
		if (!stream_prepare(st))
			stream_run(st, 0, st->gpu_count);
		return;
	}
	for (i = 0; i < st->gpu_count; i++) {
		if (bo_job_prepare(&st->jobs[i]))
			return;
		stream_run(st, i, i + 1);
		if (st->jobs[i].ring.error)
			return;
	}
}

unsigned int bo_stream_hidden_permille(const struct bo_stream_times *t)
{
	uint64_t shorter = t->engine_ns < t->file_ns ? t->engine_ns : t->file_ns;
	uint64_t sum = t->engine_ns + t->file_ns;

	if (!shorter || sum <= t->wall_ns)
		return 0;
	if (sum - t->wall_ns >= shorter)
		return 1000;
	return (unsigned int)((sum - t->wall_ns) * 1000 / shorter);
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
		bo_job_image_name(name, sizeof(name), job, "img");
		unlinkat(job->cfg->dir_fd, name, 0);
	}
	if (job->created_index) {
		bo_job_image_name(name, sizeof(name), job, "idx");
		unlinkat(job->cfg->dir_fd, name, 0);
	}
}

static void close_dmabufs(struct bo_stream_gpu *g)
{
	uint32_t i;

	for (i = 0; g->bos && i < g->bo_count; i++)
		bo_job_close_fd(&g->bos[i].dmabuf_fd);
}

static void stream_teardown(struct stream *st, bool failed)
{
	struct gpu_job *job;
	uint32_t i;

	for (i = 0; i < st->jobs_ready; i++) {
		job = &st->jobs[i];
		if (failed)
			unlink_images(job);
		bo_job_close_fd(&job->data_fd);
		bo_job_close_fd(&job->direct_fd);
		bo_job_close_fd(&job->index_fd);
		bo_job_free(job);
		ring_destroy(&job->ring);
		pthread_mutex_destroy(&job->progress_lock);
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
		stream_go(&st);
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
		return bo_job_fail(job, -ENOMEM, "gpu %" PRIu32 ": no memory for a chunk",
				   job->gpu->gpu_id);
	while (!ret && bo_job_cursor_next(job, &c, &s)) {
		ret = bo_job_restore_fill(job, &s);
		if (!ret)
			ret = bo_job_restore_verify(job, &s);
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
	int ret = bo_job_prepare_restore(job);

	return ret || !chunks ? ret : verify_chunks(job, fault);
}

static int verify(int dir_fd, uint32_t image_id, uint32_t gpu_id, const uint64_t *bo_sizes,
		  uint32_t bo_count, bool chunks, struct bo_stream_fault *fault,
		  struct bo_stream_chain *chain, char *err, size_t errlen)
{
	struct bo_stream_config cfg = {.dir_fd = dir_fd, .image_id = image_id};
	struct bo_stream_gpu gpu = {.gpu_id = gpu_id, .bo_count = bo_count};
	struct gpu_job job = {.cfg = &cfg,
			      .gpu = &gpu,
			      .engine = &bo_copy_engine_cpu, /* never called: nothing is written */
			      .dir = STREAM_RESTORE,
			      .data_fd = -1,
			      .direct_fd = -1,
			      .index_fd = -1};
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
	else if (chain) {
		chain->levels = job.ancestors.ancestor_count;
		memcpy(chain->level_bytes, job.ancestors.level_bytes, sizeof(chain->level_bytes));
		chain->zero_bytes = job.ancestors.zero_bytes;
	}
	bo_job_close_fd(&job.data_fd);
	bo_job_close_fd(&job.index_fd);
	bo_job_free(&job);
	ring_destroy(&job.ring);
	free(gpu.bos);
	return ret;
}

int bo_stream_verify(int dir_fd, uint32_t image_id, uint32_t gpu_id, const uint64_t *bo_sizes,
		     uint32_t bo_count, struct bo_stream_fault *fault, char *err, size_t errlen)
{
	return verify(dir_fd, image_id, gpu_id, bo_sizes, bo_count, true, fault, NULL, err, errlen);
}

int bo_stream_check_files(int dir_fd, uint32_t image_id, uint32_t gpu_id, const uint64_t *bo_sizes,
			  uint32_t bo_count, char *err, size_t errlen)
{
	return verify(dir_fd, image_id, gpu_id, bo_sizes, bo_count, false, NULL, NULL, err, errlen);
}

int bo_stream_describe(int dir_fd, uint32_t image_id, uint32_t gpu_id, const uint64_t *bo_sizes,
		       uint32_t bo_count, struct bo_stream_chain *chain, char *err, size_t errlen)
{
	memset(chain, 0, sizeof(*chain));
	return verify(dir_fd, image_id, gpu_id, bo_sizes, bo_count, false, NULL, chain, err,
		      errlen);
}

void bo_stream_remove(int dir_fd, uint32_t image_id, uint32_t gpu_id)
{
	static const char *const exts[] = {"img", "idx"};
	char name[64];
	size_t i;

	for (i = 0; i < 2; i++) {
		bo_stream_file_name(name, sizeof(name), image_id, gpu_id, exts[i]);
		unlinkat(dir_fd, name, 0);
	}
}
