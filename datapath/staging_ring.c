// SPDX-License-Identifier: MIT
/* The staging ring of a GPU's BO stream (see staging_ring.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datapath/staging_ring.h"

int ring_init(struct staging_ring *r)
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

int ring_alloc(struct staging_ring *r, uint32_t depth, uint32_t chunk_size)
{
	uint32_t i;

	r->slots = calloc(depth, sizeof(*r->slots));
	if (!r->slots)
		return -ENOMEM;
	r->depth = depth;
	for (i = 0; i < depth; i++)
		if (posix_memalign((void **)&r->slots[i].buf, RING_ALIGN, chunk_size))
			return -ENOMEM;
	return 0;
}

/* Also after a failed ring_alloc(), which leaves the slots it did not fill NULL. */
void ring_destroy(struct staging_ring *r)
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
struct staging_slot *ring_claim(struct staging_ring *r)
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

void ring_publish(struct staging_ring *r)
{
	pthread_mutex_lock(&r->lock);
	r->filled++;
	pthread_cond_broadcast(&r->changed);
	pthread_mutex_unlock(&r->lock);
}

void ring_finish(struct staging_ring *r)
{
	pthread_mutex_lock(&r->lock);
	r->producer_done = true;
	pthread_cond_broadcast(&r->changed);
	pthread_mutex_unlock(&r->lock);
}

/* Consumer: the next full slot, NULL at the end or once the ring has failed. */
struct staging_slot *ring_take(struct staging_ring *r)
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

void ring_release(struct staging_ring *r)
{
	pthread_mutex_lock(&r->lock);
	r->drained++;
	pthread_cond_broadcast(&r->changed);
	pthread_mutex_unlock(&r->lock);
}

void ring_failv(struct staging_ring *r, int err, const char *fmt, va_list ap)
{
	pthread_mutex_lock(&r->lock);
	if (!r->error) {
		r->error = err;
		vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	}
	pthread_cond_broadcast(&r->changed);
	pthread_mutex_unlock(&r->lock);
}

int ring_error(struct staging_ring *r)
{
	int err;

	pthread_mutex_lock(&r->lock);
	err = r->error;
	pthread_mutex_unlock(&r->lock);
	return err;
}
