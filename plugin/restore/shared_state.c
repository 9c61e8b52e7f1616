// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "plugin/restore/shared_state.h"

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

/* The image's record, the state's lock held; or an error, the lock not held. */
static int lock_image(struct shared_state *s, uint32_t id, uint64_t deadline_ms,
		      struct shared_image **img)
{
	int ret = lock_state(s, deadline_ms);

	if (ret)
		return ret;
	*img = find(s, id);
	if (*img)
		return 0;
	pthread_mutex_unlock(&s->lock);
	return -ENOENT;
}

int shared_image_begin(struct shared_state *s, uint32_t id, uint32_t pid, uint64_t deadline_ms)
{
	struct shared_image *img;
	int ret = lock_image(s, id, deadline_ms, &img);

	if (ret)
		return ret;
	if (img->state != SHARED_IMAGE_PENDING)
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
	int ret = lock_image(s, id, deadline_ms, &img);

	if (ret)
		return ret;
	if (img->state != SHARED_IMAGE_RESTORING) {
		ret = -EINVAL;
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
	int ret = lock_image(s, id, deadline_ms, &img);

	if (ret)
		return ret;
	img->resumed = 1;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int shared_image_get(struct shared_state *s, uint32_t id, struct shared_image *out,
		     uint64_t deadline_ms)
{
	struct shared_image *img;
	int ret = lock_image(s, id, deadline_ms, &img);

	if (ret)
		return ret;
	*out = *img;
	pthread_mutex_unlock(&s->lock);
	return 0;
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

/* Moves record id's handoff from `from` to `to` (under the lock); -EINVAL if it was not `from`. */
static int handoff_move(struct shared_state *s, uint32_t id, uint32_t from, uint32_t to,
			uint64_t deadline_ms)
{
	struct shared_image *img;
	int ret = lock_image(s, id, deadline_ms, &img);

	if (ret)
		return ret;
	if (img->handoff != from)
		ret = -EINVAL;
	else
		img->handoff = to;
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int shared_handoff_offer(struct shared_state *s, uint32_t id, int manifest_fd, uint64_t deadline_ms)
{
	struct shared_image *img;
	int ret = lock_image(s, id, deadline_ms, &img);

	if (ret)
		return ret;
	if (img->handoff != SHARED_HANDOFF_NONE)
		ret = -EALREADY;
	else {
		img->manifest_fd = manifest_fd;
		img->handoff = SHARED_HANDOFF_OFFERED;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int shared_handoff_settle(struct shared_state *s, uint32_t id, uint64_t offer_deadline_ms,
			  uint64_t hard_deadline_ms, uint32_t *handoff)
{
	const struct timespec pause = {.tv_nsec = 1000000};
	struct shared_image img;
	int ret;

	for (;;) {
		ret = shared_image_get(s, id, &img, hard_deadline_ms);
		if (ret)
			return ret;
		/* a quick copier may have finished before we looked: taken all the same */
		if (img.handoff == SHARED_HANDOFF_TAKEN || img.handoff == SHARED_HANDOFF_COPIED) {
			*handoff = SHARED_HANDOFF_TAKEN;
			return 0;
		}
		if (img.handoff == SHARED_HANDOFF_REFUSED) {
			*handoff = img.handoff;
			return 0;
		}
		if (img.handoff == SHARED_HANDOFF_OFFERED &&
		    shared_deadline(0) >= offer_deadline_ms &&
		    !handoff_move(s, id, SHARED_HANDOFF_OFFERED, SHARED_HANDOFF_CANCELLED,
				  hard_deadline_ms)) {
			*handoff = SHARED_HANDOFF_CANCELLED;
			return 0;
		}
		if (shared_deadline(0) >= hard_deadline_ms)
			return -ETIMEDOUT;
		nanosleep(&pause, NULL);
	}
}

int shared_handoff_next(struct shared_state *s, uint32_t *id, uint32_t *pid, int *manifest_fd,
			uint64_t deadline_ms)
{
	uint32_t i;
	int ret = lock_state(s, deadline_ms);

	if (ret)
		return ret;
	ret = -ENOENT;
	for (i = 0; i < s->n_images; i++) {
		struct shared_image *img = &s->images[i];

		if (img->handoff != SHARED_HANDOFF_OFFERED)
			continue;
		img->handoff = SHARED_HANDOFF_TAKING;
		*id = img->id;
		*pid = img->pid;
		*manifest_fd = img->manifest_fd;
		ret = 0;
		break;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int shared_handoff_answer(struct shared_state *s, uint32_t id, int taken, uint64_t deadline_ms)
{
	return handoff_move(s, id, SHARED_HANDOFF_TAKING,
			    taken ? SHARED_HANDOFF_TAKEN : SHARED_HANDOFF_REFUSED, deadline_ms);
}

int shared_handoff_copied(struct shared_state *s, uint32_t id, int error, uint64_t bytes,
			  uint64_t usec, uint64_t deadline_ms)
{
	struct shared_image *img;
	struct timespec now;
	int ret = lock_image(s, id, deadline_ms, &img);

	if (ret)
		return ret;
	if (img->handoff != SHARED_HANDOFF_TAKEN)
		ret = -EINVAL;
	else {
		clock_gettime(CLOCK_MONOTONIC, &now);
		img->copy_error = error;
		img->copy_bytes = bytes;
		img->copy_usec = usec;
		img->copy_done_usec = (uint64_t)now.tv_sec * 1000000 + (uint64_t)now.tv_nsec / 1000;
		img->handoff = SHARED_HANDOFF_COPIED;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

static struct shared_share *find_share(struct shared_state *s, uint32_t share_id)
{
	uint32_t i;

	for (i = 0; i < s->n_shares; i++)
		if (s->shares[i].share_id == share_id)
			return &s->shares[i];
	return NULL;
}

int shared_share_add_taker(struct shared_state *s, uint32_t share_id, uint32_t origin_image)
{
	struct shared_share *sh = find_share(s, share_id);

	if (sh) {
		sh->importers++;
		return 0;
	}
	if (s->n_shares >= SHARED_MAX_SHARES)
		return -E2BIG;
	s->shares[s->n_shares++] = (struct shared_share){
		.share_id = share_id, .origin_image = origin_image, .importers = 1, .fd = -1};
	return 0;
}

/* PENDING -> `to`, with rec's fields (PUBLISHED) or the error (FAILED). */
static int share_settle(struct shared_state *s, uint32_t share_id, uint32_t to,
			const struct shared_share *rec, int error, uint64_t deadline_ms)
{
	struct shared_share *sh;
	int ret = lock_state(s, deadline_ms);

	if (ret)
		return ret;
	sh = find_share(s, share_id);
	if (!sh || sh->state != SHARED_SHARE_PENDING) {
		ret = sh ? -EALREADY : -ENOENT;
	} else {
		if (rec) {
			sh->pid = rec->pid;
			sh->fd = rec->fd;
			sh->gpu_id = rec->gpu_id;
			sh->offset = rec->offset;
		}
		sh->error = error;
		sh->state = to;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int shared_share_publish(struct shared_state *s, uint32_t share_id, const struct shared_share *rec,
			 uint64_t deadline_ms)
{
	return share_settle(s, share_id, SHARED_SHARE_PUBLISHED, rec, 0, deadline_ms);
}

int shared_share_fail(struct shared_state *s, uint32_t share_id, int error, uint64_t deadline_ms)
{
	return share_settle(s, share_id, SHARED_SHARE_FAILED, NULL, error ? error : -EIO,
			    deadline_ms);
}

int shared_share_get(struct shared_state *s, uint32_t share_id, struct shared_share *out,
		     uint64_t deadline_ms)
{
	struct shared_share *sh;
	int ret = lock_state(s, deadline_ms);

	if (ret)
		return ret;
	sh = find_share(s, share_id);
	if (sh)
		*out = *sh;
	pthread_mutex_unlock(&s->lock);
	return sh ? 0 : -ENOENT;
}

static uint64_t now_ms(void)
{
	return shared_deadline(0);
}

int shared_share_wait(struct shared_state *s, uint32_t share_id, struct shared_share *out,
		      uint64_t deadline_ms)
{
	int ret;

	for (;;) {
		ret = shared_share_get(s, share_id, out, deadline_ms);
		if (ret || out->state != SHARED_SHARE_PENDING)
			return ret;
		if (now_ms() >= deadline_ms)
			return -ETIMEDOUT;
		usleep(RETRY_SLICE_MS * 1000 / 4);
	}
}

int shared_share_took(struct shared_state *s, uint32_t share_id, uint64_t deadline_ms)
{
	struct shared_share *sh;
	int ret = lock_state(s, deadline_ms);

	if (ret)
		return ret;
	sh = find_share(s, share_id);
	if (sh)
		sh->taken++;
	pthread_mutex_unlock(&s->lock);
	return sh ? 0 : -ENOENT;
}

int shared_share_wait_taken(struct shared_state *s, uint32_t share_id, uint64_t deadline_ms)
{
	struct shared_share sh;
	int ret;

	for (;;) {
		ret = shared_share_get(s, share_id, &sh, deadline_ms);
		if (ret || sh.taken >= sh.importers)
			return ret;
		if (now_ms() >= deadline_ms)
			return -ETIMEDOUT;
		usleep(RETRY_SLICE_MS * 1000 / 4);
	}
}
