// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "shared_state.h"

#define RETRY_SLICE_MS 20

uint64_t shared_deadline(uint64_t ms_from_now)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 + ms_from_now;
}

static int init_robust(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	int ret;

	ret = pthread_mutexattr_init(&a);
	if (ret)
		return -ret;
	ret = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	if (!ret)
		ret = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (!ret)
		ret = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return -ret;
}

struct shared_state *shared_state_create(const uint32_t *ids, uint32_t n)
{
	struct shared_state *s;
	uint32_t i;

	if (n > SHARED_MAX_IMAGES) {
		errno = E2BIG;
		return NULL;
	}
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED)
		return NULL;
	if (init_robust(&s->lock))
		goto fail;
	for (i = 0; i < SHARED_COPY_SLOTS; i++)
		if (init_robust(&s->copy_slots[i]))
			goto fail;
	for (i = 0; i < n; i++)
		s->images[i].id = ids[i];
	s->n_images = n;
	return s;
fail:
	munmap(s, sizeof(*s));
	errno = EINVAL;
	return NULL;
}

void shared_state_destroy(struct shared_state *s)
{
	if (s)
		munmap(s, sizeof(*s));
}

static struct timespec to_timespec(uint64_t ms)
{
	return (struct timespec){.tv_sec = (time_t)(ms / 1000),
				 .tv_nsec = (long)(ms % 1000) * 1000000};
}

/* One timed attempt: 0 when owned (a dead owner is recovered), else -errno. */
static int lock_until(struct shared_state *s, pthread_mutex_t *m, uint64_t until_ms)
{
	struct timespec ts = to_timespec(until_ms);
	int ret = pthread_mutex_timedlock(m, &ts);

	if (ret == EOWNERDEAD) {
		pthread_mutex_consistent(m);
		__atomic_add_fetch(&s->recoveries, 1, __ATOMIC_RELAXED);
		return 0;
	}
	return -ret;
}

static int lock_state(struct shared_state *s, uint64_t deadline_ms)
{
	return lock_until(s, &s->lock, deadline_ms);
}

static struct shared_image *find(struct shared_state *s, uint32_t id)
{
	uint32_t i;

	for (i = 0; i < s->n_images; i++)
		if (s->images[i].id == id)
			return &s->images[i];
	return NULL;
}

int shared_image_begin(struct shared_state *s, uint32_t id, uint32_t pid, uint64_t deadline_ms)
{
	struct shared_image *img;
	int ret = lock_state(s, deadline_ms);

	if (ret)
		return ret;
	img = find(s, id);
	if (!img)
		ret = -ENOENT;
	else if (img->state != SHARED_IMAGE_PENDING)
		ret = -EALREADY;
	else {
		img->state = SHARED_IMAGE_RESTORING;
		img->pid = pid;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int shared_image_end(struct shared_state *s, uint32_t id, int error, uint64_t bytes, uint64_t usec,
		     uint64_t deadline_ms)
{
	struct shared_image *img;
	int ret = lock_state(s, deadline_ms);

	if (ret)
		return ret;
	img = find(s, id);
	if (!img || img->state != SHARED_IMAGE_RESTORING) {
		ret = img ? -EINVAL : -ENOENT;
	} else {
		img->state = error ? SHARED_IMAGE_FAILED : SHARED_IMAGE_DONE;
		img->error = error;
		img->bytes = bytes;
		img->usec = usec;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int shared_image_resumed(struct shared_state *s, uint32_t id, uint64_t deadline_ms)
{
	struct shared_image *img;
	int ret = lock_state(s, deadline_ms);

	if (ret)
		return ret;
	img = find(s, id);
	if (img)
		img->resumed = 1;
	pthread_mutex_unlock(&s->lock);
	return img ? 0 : -ENOENT;
}

int shared_image_get(struct shared_state *s, uint32_t id, struct shared_image *out,
		     uint64_t deadline_ms)
{
	struct shared_image *img;
	int ret = lock_state(s, deadline_ms);

	if (ret)
		return ret;
	img = find(s, id);
	if (img)
		*out = *img;
	pthread_mutex_unlock(&s->lock);
	return img ? 0 : -ENOENT;
}

int shared_copy_slot_take(struct shared_state *s, uint64_t deadline_ms, int *slot)
{
	uint64_t now, until;
	int i, ret, turn = 0;

	for (;;) {
		for (i = 0; i < SHARED_COPY_SLOTS; i++) {
			ret = pthread_mutex_trylock(&s->copy_slots[i]);
			if (ret == EOWNERDEAD) {
				pthread_mutex_consistent(&s->copy_slots[i]);
				__atomic_add_fetch(&s->recoveries, 1, __ATOMIC_RELAXED);
				ret = 0;
			}
			if (!ret) {
				*slot = i;
				return 0;
			}
		}
		/* all busy: wait on one of them, for at most the time left */
		now = shared_deadline(0);
		if (now >= deadline_ms)
			return -ETIMEDOUT;
		until = now + RETRY_SLICE_MS < deadline_ms ? now + RETRY_SLICE_MS : deadline_ms;
		i = turn++ % SHARED_COPY_SLOTS;
		ret = lock_until(s, &s->copy_slots[i], until);
		if (!ret) {
			*slot = i;
			return 0;
		}
		if (ret != -ETIMEDOUT)
			return ret;
	}
}

void shared_copy_slot_put(struct shared_state *s, int slot)
{
	if (slot >= 0 && slot < SHARED_COPY_SLOTS)
		pthread_mutex_unlock(&s->copy_slots[slot]);
}
