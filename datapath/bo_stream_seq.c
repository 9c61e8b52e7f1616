// SPDX-License-Identifier: MIT
/*
 * Streamed images of a GPU's BO contents (bo_stream_job.h, "bo_stream_seq.c"):
 * the pipeline of bo_stream_job.c with one stream of bo_seq.h's layout in
 * place of the data and index files. The dump's consumer writes each chunk
 * as the stream's next record, in order (its producer fills the ring in
 * order; no chunk is done in place); the restore's producer reads each
 * record into a staging slot, and the consumer checks its CRC-64 before the
 * bytes reach the BO, as for files.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datapath/bo_index.h"
#include "datapath/bo_seq.h"
#include "datapath/bo_stream_job.h"
#include "datapath/staging_ring.h"

#define ERR_LEN RING_MSG_LEN

static int seq_open(struct gpu_job *job, enum bo_access access)
{
	char name[64];
	int fd;

	bo_job_image_name(name, sizeof(name), job, "seq");
	fd = job->cfg->stream_open(job->cfg->stream_arg, name, access);
	if (fd < 0)
		return bo_job_fail(job, fd < -1 ? fd : -EIO,
				   "gpu %" PRIu32 ": %s: the image stream did not open it (%s)",
				   job->gpu->gpu_id, name,
				   fd == -ENOENT ? "the stream has no such image"
						 : strerror(fd < -1 ? -fd : EIO));
	job->data_fd = fd;
	return 0;
}

/* A bo_seq message as the job's error, naming the GPU's stream. */
static int seq_fail(struct gpu_job *job, int err, const char *msg)
{
	char name[64];

	bo_job_image_name(name, sizeof(name), job, "seq");
	return bo_job_fail(job, err, "gpu %" PRIu32 ": %s: %s", job->gpu->gpu_id, name, msg);
}

int bo_job_seq_prepare_dump(struct gpu_job *job)
{
	const struct bo_stream_gpu *g = job->gpu;
	struct bo_seq_header h;
	char msg[ERR_LEN];
	uint64_t at = 0;
	int ret = bo_job_layout(job);

	if (ret)
		return ret;
	job->sum_crc64 = true;
	job->entries = calloc(job->chunk_count ? job->chunk_count : 1, sizeof(*job->entries));
	job->seq_bos = calloc(g->bo_count ? g->bo_count : 1, sizeof(*job->seq_bos));
	if (!job->entries || !job->seq_bos)
		return bo_job_fail(job, -ENOMEM, "gpu %" PRIu32 ": no memory", g->gpu_id);
	for (uint32_t i = 0; i < g->bo_count; i++) {
		job->seq_bos[i] = (struct bo_seq_bo){g->bos[i].size, at, g->bos[i].gpu_va};
		at += g->bos[i].size;
	}
	h = (struct bo_seq_header){.gpu_id = g->gpu_id,
				   .image_id = job->cfg->image_id,
				   .chunk_size = job->chunk_size,
				   .bo_count = g->bo_count,
				   .data_bytes = job->data_bytes,
				   .bos = job->seq_bos};
	ret = seq_open(job, BO_ACCESS_WRITE);
	if (!ret && bo_seq_start(&job->seq_w, job->data_fd, &h, msg, sizeof(msg)))
		ret = seq_fail(job, -EIO, msg);
	return ret;
}

/* The stream's header against the caller's BOs (from its own metadata), exactly. */
static int seq_check_header(struct gpu_job *job)
{
	const struct bo_seq_header *h = &job->seq_r.h;
	const struct bo_stream_gpu *g = job->gpu;
	char msg[ERR_LEN];

	if (h->gpu_id != g->gpu_id || h->image_id != job->cfg->image_id) {
		snprintf(msg, sizeof(msg), "holds GPU %" PRIu32 " of image %" PRIu32, h->gpu_id,
			 h->image_id);
		return seq_fail(job, -EINVAL, msg);
	}
	if (h->bo_count != g->bo_count) {
		snprintf(msg, sizeof(msg), "holds %" PRIu32 " BOs, the checkpoint has %" PRIu32,
			 h->bo_count, g->bo_count);
		return seq_fail(job, -EINVAL, msg);
	}
	for (uint32_t i = 0; i < g->bo_count; i++)
		if (h->bos[i].size != g->bos[i].size) {
			snprintf(msg, sizeof(msg),
				 "BO %" PRIu32 " holds %" PRIu64
				 " bytes, the checkpoint says %" PRIu64,
				 i, h->bos[i].size, g->bos[i].size);
			return seq_fail(job, -EINVAL, msg);
		}
	return 0;
}

int bo_job_seq_prepare_restore(struct gpu_job *job)
{
	char msg[ERR_LEN];
	int ret = seq_open(job, BO_ACCESS_READ);

	if (ret)
		return ret;
	ret = bo_seq_reader_start(&job->seq_r, job->data_fd, msg, sizeof(msg));
	if (ret)
		return seq_fail(job, ret == -ENODATA ? -EIO : ret, msg);
	ret = seq_check_header(job);
	if (ret)
		return ret;
	job->chunk_size = job->seq_r.h.chunk_size;
	job->sum_crc64 = true;
	return bo_job_layout(job);
}

int bo_job_seq_put(struct gpu_job *job, const struct staging_slot *s)
{
	char msg[ERR_LEN];
	int ret = bo_seq_put(&job->seq_w, s->file_off, s->zero ? NULL : s->buf, s->len,
			     job->entries[s->chunk_index].crc64, msg, sizeof(msg));

	return ret ? seq_fail(job, ret, msg) : 0;
}

int bo_job_seq_finish(struct gpu_job *job)
{
	char msg[ERR_LEN];
	int ret = bo_seq_finish(&job->seq_w, msg, sizeof(msg));

	return ret ? seq_fail(job, ret, msg) : 0;
}

/* A zero record: the engine's zero op, a shared zero chunk, or zeros in the slot. */
static void seq_zero(struct gpu_job *job, struct staging_slot *s)
{
	s->zero = true;
	if (job->engine->ops->zero)
		return;
	if (!job->zeros)
		job->zeros = bo_job_zeros_map(job->chunk_size);
	if (job->zeros)
		return;
	memset(s->buf, 0, s->len); /* no address space for it: real zeros, checked as data */
	s->zero = false;
	s->sum = bo_index_crc64(0, s->buf, s->len);
}

int bo_job_seq_fill(struct gpu_job *job, struct staging_slot *s)
{
	struct bo_seq_record rec;
	char msg[ERR_LEN];
	int ret = bo_seq_reader_next(&job->seq_r, &rec, msg, sizeof(msg));

	if (ret == 1) {
		snprintf(msg, sizeof(msg), "the stream ends before the chunk at %" PRIu64,
			 s->file_off);
		ret = -EPROTO;
	} else if (!ret && (rec.offset != s->file_off || rec.len != s->len)) {
		snprintf(msg, sizeof(msg),
			 "a record of %" PRIu64 " bytes at %" PRIu64 " where the chunk of %" PRIu32
			 " bytes at %" PRIu64 " was due",
			 rec.len, rec.offset, s->len, s->file_off);
		ret = -EPROTO;
	} else if (!ret && !rec.zero) {
		ret = bo_seq_reader_data(&job->seq_r, &rec, s->buf, msg, sizeof(msg));
	}
	if (ret)
		return seq_fail(job, ret, msg);
	s->level = 0;
	s->zero = false;
	s->sum = rec.crc;
	if (rec.zero)
		seq_zero(job, s);
	return 0;
}

int bo_job_seq_end(struct gpu_job *job)
{
	struct bo_seq_record rec;
	char msg[ERR_LEN];
	int ret = bo_seq_reader_next(&job->seq_r, &rec, msg, sizeof(msg));

	if (ret == 1)
		return 0;
	if (!ret)
		snprintf(msg, sizeof(msg), "more records after the last chunk (%" PRIu64 " bytes)",
			 job->data_bytes);
	return seq_fail(job, ret ? ret : -EPROTO, msg);
}

void bo_job_seq_free(struct gpu_job *job)
{
	free(job->seq_bos);
	job->seq_bos = NULL;
	bo_seq_reader_end(&job->seq_r);
}
