// SPDX-License-Identifier: MIT
/* The staging ring of a GPU's BO stream (see staging_ring.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

/* Huge pages: the ring's start is aligned to one, and the kernel is asked for them. */
#define RING_HUGE (2ul << 20)

/*
 * One anonymous mapping for all the buffers, aligned to a huge page and
 * advised to use them: the O_DIRECT reads and writes (and a userptr
 * registration) pin the buffers' pages for every request, a 2 MiB folio
 * at a time instead of 512 pages. The buffers follow one another, each
 * page-aligned (chunk_size is a multiple of the page).
 */
int ring_alloc(struct staging_ring *r, uint32_t depth, uint32_t chunk_size)
{
	size_t stride = ((size_t)chunk_size + RING_ALIGN - 1) & ~(size_t)(RING_ALIGN - 1);
	size_t len = ((stride * depth + RING_HUGE - 1) & ~(RING_HUGE - 1)) + RING_HUGE;
	uint8_t *map, *base;
	uint32_t i;

	r->slots = calloc(depth, sizeof(*r->slots));
	if (!r->slots)
		return -ENOMEM;
	r->depth = depth;
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return -ENOMEM;
	/* the huge page's worth of slack before and after the buffers goes back */
	base = (uint8_t *)(((uintptr_t)map + RING_HUGE - 1) & ~(uintptr_t)(RING_HUGE - 1));
	r->map_len = len - RING_HUGE;
	if (base > map)
		munmap(map, (size_t)(base - map));
	if (map + len > base + r->map_len)
		munmap(base + r->map_len, (size_t)(map + len - (base + r->map_len)));
	r->map = base;
	/* a hint: without it (THP off or unsupported) the buffers are small pages */
	madvise(base, r->map_len, MADV_HUGEPAGE);
	for (i = 0; i < depth; i++)
		r->slots[i].buf = base + i * stride;
	return 0;
}

/* Also after a failed ring_alloc(). */
void ring_destroy(struct staging_ring *r)
{
	if (r->map)
		munmap(r->map, r->map_len);
	r->map = NULL;
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

uint32_t ring_take_many(struct staging_ring *r, uint32_t want, struct staging_slot **out)
{
	uint32_t n = 0;

	if (want > r->depth)
		want = r->depth;
	pthread_mutex_lock(&r->lock);
	while (!r->error && r->filled - r->drained < want && !r->producer_done)
		pthread_cond_wait(&r->changed, &r->lock);
	for (; !r->error && n < want && r->drained + n != r->filled; n++)
		out[n] = &r->slots[(r->drained + n) % r->depth];
	pthread_mutex_unlock(&r->lock);
	return n;
}

void ring_release_many(struct staging_ring *r, uint32_t n)
{
	pthread_mutex_lock(&r->lock);
	r->drained += n;
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
