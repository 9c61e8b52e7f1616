/* SPDX-License-Identifier: MIT */
/*
 * The per-GPU pipeline of bo_stream.c (threads, files, set-up in
 * bo_stream_job.c; one chunk's stages in bo_stream_chunk.c), for bo_stream.c
 * only: not a contract for other modules (bo_stream.h is the module's).
 *
 * A gpu_job streams one GPU's BOs between its copy engine and its two image
 * files through a staging ring, with a producer and a consumer thread:
 *   dump:    producer = copy engine read + CRC-64, consumer = pwrite to .img
 *            (zero pages skipped: holes)
 *   restore: producer = pread from .img, consumer = verify + copy engine write
 *            (a chunk that is a hole: no read; the engine's zero op, or a
 *            shared zero chunk)
 * A dump's chunk of a BO in host memory, with an engine that has a view op,
 * is done by the producer alone: checksummed and written from the BO's own
 * memory, with no staging copy and no hand-over.
 * Streamed (cfg->stream_open, bo_stream_seq.c): the .img/.idx pair is one
 * bo_seq stream, written by the dump's consumer, read by the restore's
 * producer; no chunk is done in place.
 * bo_job_prepare() opens and checks the files, bo_job_start() runs both
 * threads, bo_job_join() waits for them; the first error is in job->ring.
 */
#ifndef AMDGPU_CRIU_BO_STREAM_JOB_H
#define AMDGPU_CRIU_BO_STREAM_JOB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datapath/bo_chain.h"
#include "datapath/bo_index.h"
#include "datapath/bo_seq.h"
#include "datapath/bo_stream_types.h"
#include "datapath/direct_read.h"
#include "datapath/staging_ring.h"

#define FILE_PAGE 4096u /* the image files' page: holes are made of these */
enum stream_dir { STREAM_DUMP, STREAM_RESTORE };

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
	/* dump: chunk_count entries, written to the index at the end */
	struct bo_chunk_entry *entries;
	struct bo_parent *parent; /* dump: the parent's index, NULL: none (written whole) */
	struct bo_index_layout
		ancestors;  /* dump: the child's ancestor table; restore: the index's */
	uint32_t max_level; /* dump: deepest level referred to */
	uint64_t parent_bytes, written_bytes, zero_bytes;
	uint64_t in_place_bytes;	/* dump: written from the BO in place, by the producer */
	struct bo_index_reader *reader; /* restore: the index's entries, read on demand */
	struct bo_chain chain;		/* restore: the ancestors' data files */
	/* the checksum of every chunk: CRC-64 (dumps; restores of version 3
	 * indexes), else CRC-32 (restores of version 1 and 2 indexes) */
	bool sum_crc64;
	/* of chunk_size zero bytes, once zero_sum_known */
	uint64_t zero_sum;
	bool zero_sum_known;
	/* restore: a chunk of zeros for holes (a read-only anonymous mapping,
	 * page-aligned and never written: its pages stay the kernel's zero
	 * page), NULL until the first hole; engines with a zero op need none */
	uint8_t *zeros;
	int data_fd;
	/* dump: the data file again with O_DIRECT, for page-aligned runs (no
	 * page-cache copy) when cfg->direct_io asks so; -1 otherwise or
	 * where the file system refuses it */
	int direct_fd;
	int index_fd;
	/* restore: the data file read with O_DIRECT (direct_open), else buffered */
	struct direct_reader direct;
	bool direct_open;
	/* dump: this call created the file (a name that existed is not ours to remove) */
	bool created_data, created_index;
	struct open_bo cur;
	/* streamed images (cfg->stream_open): data_fd is the GPU's stream,
	 * written by the consumer (dump) or read by the producer (restore) */
	bool seq;
	struct bo_seq_writer seq_w;
	struct bo_seq_bo *seq_bos; /* dump: the header's BO table */
	struct bo_seq_reader seq_r;
	/* progress: both threads of a dump with in-place BOs report it */
	pthread_mutex_t progress_lock;
	uint64_t done_bytes;
	uint64_t next_progress;
	struct staging_ring ring;
	pthread_t producer, consumer;
	bool producer_running, consumer_running;
	/* busy time of the engine side and of the file side (each one thread's) */
	uint64_t engine_ns, file_ns, checksum_ns;
	uint64_t in_place_file_ns; /* the producer's writes of in-place chunks (file time) */
	uint64_t producer_end_ns, consumer_end_ns; /* when each thread ended */
	uint64_t producer_cpu_ns, consumer_cpu_ns; /* each thread's CPU time at its end */
};

/* Walks the chunks in file order: fills the position fields of the next slot. */
struct chunk_cursor {
	uint32_t bo_index;
	uint64_t bo_off;
	uint64_t file_off;
	uint64_t chunk_index;
};

/* Records the job's first error (a message and err) and stops both threads; returns err. */
__attribute__((format(printf, 3, 4))) int bo_job_fail(struct gpu_job *job, int err, const char *fmt,
						      ...);
uint64_t bo_job_now_ns(void);
/* CPU time of the calling thread: what a pass cost, not how long it waited
 * for a core (GPUs' threads outnumber the cores). */
uint64_t bo_job_thread_cpu_ns(void);
void bo_job_close_fd(int *fd);
/* The name of the job's image file with extension ext ("img", "idx"). */
void bo_job_image_name(char *buf, size_t len, const struct gpu_job *job, const char *ext);
/* Opens and checks the GPU's files for its direction (a dump creates them). */
int bo_job_prepare(struct gpu_job *job);
int bo_job_prepare_restore(struct gpu_job *job);
/* Starts both threads; on failure stops and joins what was started. */
int bo_job_start(struct gpu_job *job);
void bo_job_join(struct gpu_job *job);
/* The next chunk's position fields into s; false after the last chunk. */
bool bo_job_cursor_next(const struct gpu_job *job, struct chunk_cursor *c, struct staging_slot *s);
/* ---- bo_stream_chunk.c: one chunk's stages ---- */

/* Closes the open BO (job->cur) and its dma-buf fd. */
void bo_job_close_bo(struct gpu_job *job);
/* Progress after len more bytes (thread-safe: both threads of a job may call it). */
void bo_job_report_progress(struct gpu_job *job, uint32_t len);
/* Dump: the producer's stage (engine read, zero test, checksums, index
 * entry) and the consumer's (the chunk's non-zero pages written). */
int bo_chunk_dump_fill(struct gpu_job *job, struct staging_slot *s);
int bo_chunk_dump_drain(struct gpu_job *job, struct staging_slot *s);
/* Restore: the consumer's stage (checked, then written through the engine). */
int bo_chunk_restore_drain(struct gpu_job *job, struct staging_slot *s);
/* The dump's chunk (position fields set) is done in place, by the producer
 * alone, with bo_chunk_in_place_run(): its BO is host memory and the engine
 * has a view. */
bool bo_chunk_in_place(const struct gpu_job *job, const struct staging_slot *pos);
int bo_chunk_in_place_run(struct gpu_job *job, struct staging_slot *s);
/* Restore's producer stage: reads the slot's chunk (or knows it is a hole). */
int bo_job_restore_fill(struct gpu_job *job, struct staging_slot *s);
/* Restore's consumer stage, first: the chunk's checksum against the index's (-EBADMSG). */
int bo_job_restore_verify(struct gpu_job *job, const struct staging_slot *s);
/* Restore: reads go through the page cache from now on, for this reason. */
void bo_job_direct_read_off(struct gpu_job *job, const char *why);
void bo_job_zeros_unmap(uint8_t *zeros, uint32_t chunk_size);
/* Frees what prepare and the run allocated (not the ring, not the fds). */
void bo_job_free(struct gpu_job *job);
/* data_bytes and chunk_count from the BO sizes and chunk_size. */
int bo_job_layout(struct gpu_job *job);

/* ---- bo_stream_seq.c: streamed images (cfg->stream_open, bo_seq.h) ---- */

/* Opens the GPU's stream and writes its header / reads and checks it. */
int bo_job_seq_prepare_dump(struct gpu_job *job);
int bo_job_seq_prepare_restore(struct gpu_job *job);
/* Dump, consumer: the slot's chunk as the stream's next record; the end record. */
int bo_job_seq_put(struct gpu_job *job, const struct staging_slot *s);
int bo_job_seq_finish(struct gpu_job *job);
/* Restore, producer: the next record into the slot (it must be the slot's
 * chunk); after the last chunk, the end record. */
int bo_job_seq_fill(struct gpu_job *job, struct staging_slot *s);
int bo_job_seq_end(struct gpu_job *job);
void bo_job_seq_free(struct gpu_job *job);
/* chunk_size zero bytes costing no memory (bo_stream_chunk.c); NULL if none. */
uint8_t *bo_job_zeros_map(uint32_t chunk_size);

#endif
