/* SPDX-License-Identifier: MIT */
/*
 * The staging ring of one GPU's BO stream (bo_stream.c): a bounded
 * single-producer single-consumer queue of chunk-sized buffers, and the
 * first error of the GPU, which stops both sides.
 *
 * The producer claims an empty slot, fills it and publishes it; the consumer
 * takes a full slot, drains it and releases it. ring_claim()/ring_take()
 * block while the ring is full/empty and return NULL once the ring has
 * failed (ring_failv() from either side, or from the caller's thread) or,
 * for ring_take(), once the producer has finished and all is drained.
 * Memory: depth x chunk_size, page-aligned.
 */
#ifndef AMDGPU_CRIU_STAGING_RING_H
#define AMDGPU_CRIU_STAGING_RING_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#define RING_MSG_LEN 256
#define RING_ALIGN   4096u

struct staging_slot {
	uint8_t *buf;
	uint32_t len;
	uint32_t bo_index;
	uint64_t bo_off;
	uint64_t file_off;
	uint64_t chunk_index;
	bool zero; /* all bytes zero (dump: nothing to write) */
	/* where the chunk's bytes are (bo_chain.h): level 0 here at file_off,
	 * else ancestor `level` at src_off (dump: in the parent, nothing to
	 * write); restore: the checksum the index expects (gpu_job.sum_crc64) */
	uint32_t level;
	uint64_t sum;
	uint64_t src_off;
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
	char msg[RING_MSG_LEN];
};

/* Lock and condition; 0 or -ENOMEM. */
int ring_init(struct staging_ring *r);
/* depth buffers of chunk_size bytes; -ENOMEM (ring_destroy() still frees what was allocated). */
int ring_alloc(struct staging_ring *r, uint32_t depth, uint32_t chunk_size);
void ring_destroy(struct staging_ring *r);

struct staging_slot *ring_claim(struct staging_ring *r);
void ring_publish(struct staging_ring *r);
void ring_finish(struct staging_ring *r);
struct staging_slot *ring_take(struct staging_ring *r);
void ring_release(struct staging_ring *r);

/* Records the first error (err, and the message) and wakes both sides. */
void ring_failv(struct staging_ring *r, int err, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
/* The first error, 0 if none. */
int ring_error(struct staging_ring *r);

#endif
