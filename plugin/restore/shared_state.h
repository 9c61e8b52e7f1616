/* SPDX-License-Identifier: MIT */
/*
 * The one place where state crosses processes during a restore: between the
 * CRIU master and the restored tasks it forks.
 *
 * Where: one MAP_SHARED anonymous mapping created by the master in the
 * plugin's init hook, before CRIU forks the restored tasks, which inherit it.
 * CRIU's restorer later replaces every mapping of a task with the
 * application's own, so the application never sees it. The master unmaps it
 * in the exit hook.
 *
 * Protocol:
 * - `images[]`: one record per checkpointed /dev/kfd file, filled by the
 *   master (state PENDING). The task restoring it moves it PENDING ->
 *   RESTORING (shared_image_begin(); a second claim is refused, so nothing is
 *   restored or released twice) and RESTORING -> DONE or FAILED with its
 *   figures (shared_image_end()). The master reads the records in the exit
 *   hook: a record still RESTORING belongs to a task that died mid-restore.
 *   Records are changed only under `lock`.
 * - `copy_slots[]`: at most SHARED_COPY_SLOTS tasks stream BO contents at the
 *   same time, which bounds the staging memory of the whole restore.
 * - Parallel restore (restore_copy.h): a task that has RESTOREd offers its
 *   BO contents to the master's copier instead of copying them: `handoff`
 *   NONE -> OFFERED (task, with the fd number of a manifest of its BOs) ->
 *   TAKING (copier, which duplicates the task's fds with pidfd_getfd) ->
 *   TAKEN (then the task closes its own and goes on) or REFUSED (the task
 *   copies itself); a task that waited too long moves OFFERED -> CANCELLED
 *   and copies itself (the copier then leaves it). TAKEN -> COPIED when the
 *   copier is done, with `copy_error` and its figures; the master's RESUME
 *   of that task waits for COPIED.
 * - `shares[]` (restore_share.h): one record per KFD BO that other BOs of
 *   the checkpoint import (one buffer), filled by the master: its share_id,
 *   the file id of the process that has it (the origin) and how many BOs
 *   import it (state PENDING). The origin's task, once RESTOREd, PUBLISHES
 *   its pid, the number of an fd of the BO's dma-buf it keeps open, the BO's
 *   new mmap offset and its GPU; or marks it FAILED. An importing task waits
 *   for PUBLISHED, duplicates the fd with pidfd_getfd() and counts it
 *   `taken`; the origin's task closes its fd once `taken` reaches
 *   `importers` (at its first UPDATE_VMA_MAP, bounded wait).
 * - Every lock is a robust, process-shared mutex: when its owner dies, the
 *   next locker gets EOWNERDEAD from the kernel (exactly one locker does),
 *   marks it consistent and counts the recovery; a slot is thereby handed
 *   on, never released twice. Every wait is bounded: callers pass a
 *   deadline, each retry waits only for the time left, and running out is
 *   -ETIMEDOUT with a clear message, never a hang.
 */
#ifndef AMDGPU_CRIU_SHARED_STATE_H
#define AMDGPU_CRIU_SHARED_STATE_H

#include <pthread.h>
#include <stdint.h>

#define SHARED_MAX_IMAGES 1024
#define SHARED_COPY_SLOTS 4
#define SHARED_MAX_SHARES 4096

enum shared_image_state {
	SHARED_IMAGE_PENDING = 0,
	SHARED_IMAGE_RESTORING,
	SHARED_IMAGE_DONE,
	SHARED_IMAGE_FAILED,
};

struct shared_image {
	uint32_t id;		 /* CRIU file id of the /dev/kfd file */
	uint32_t state;		 /* enum shared_image_state */
	int32_t error;		 /* -errno when FAILED */
	uint32_t pid;		 /* restoring task, as it sees itself */
	uint64_t bytes;		 /* BO contents written */
	uint64_t usec;		 /* time in the task's restore */
	uint32_t resumed;	 /* the master's RESUME of its task succeeded */
	uint32_t handoff;	 /* enum shared_handoff */
	int32_t manifest_fd;	 /* OFFERED: the task's fd of its manifest */
	int32_t copy_error;	 /* COPIED: -errno, 0 when every BO was written */
	uint64_t copy_bytes;	 /* COPIED: bytes the copier wrote */
	uint64_t copy_usec;	 /* COPIED: its time, from TAKEN */
	uint64_t copy_done_usec; /* COPIED: when (CLOCK_MONOTONIC, us) */
};

enum shared_handoff {
	SHARED_HANDOFF_NONE = 0,
	SHARED_HANDOFF_OFFERED,
	SHARED_HANDOFF_TAKING,
	SHARED_HANDOFF_TAKEN,
	SHARED_HANDOFF_REFUSED,
	SHARED_HANDOFF_CANCELLED,
	SHARED_HANDOFF_COPIED,
};

enum shared_share_state {
	SHARED_SHARE_PENDING = 0,
	SHARED_SHARE_PUBLISHED,
	SHARED_SHARE_FAILED,
};

struct shared_share {
	uint32_t share_id;     /* KfdBoEntry.share_id */
	uint32_t origin_image; /* file id of the process that has the BO */
	uint32_t importers;    /* BOs of the checkpoint that import it */
	uint32_t state;	       /* enum shared_share_state */
	int32_t error;	       /* FAILED: -errno */
	uint32_t pid;	       /* PUBLISHED: the origin's task, as it sees itself */
	int32_t fd;	       /* PUBLISHED: its fd of the BO's dma-buf */
	uint32_t gpu_id;       /* PUBLISHED: the local (actual) GPU of the BO */
	uint64_t offset;       /* PUBLISHED: the BO's mmap offset after RESTORE */
	uint32_t taken;	       /* importers that have duplicated the fd */
};

struct shared_state {
	pthread_mutex_t lock;
	uint32_t n_images;
	struct shared_image images[SHARED_MAX_IMAGES];
	uint32_t n_shares;
	struct shared_share shares[SHARED_MAX_SHARES];
	pthread_mutex_t copy_slots[SHARED_COPY_SLOTS];
	uint32_t recoveries; /* dead owners recovered (under the lock that was recovered) */
};

/* Master: the mapping, with a PENDING record per id. NULL on failure (errno). */
struct shared_state *shared_state_create(const uint32_t *ids, uint32_t n);
void shared_state_destroy(struct shared_state *s);

/* Task: PENDING -> RESTORING. -EALREADY if claimed before, -ENOENT if unknown. */
int shared_image_begin(struct shared_state *s, uint32_t id, uint32_t pid, uint64_t deadline_ms);
/* Task: RESTORING -> DONE (error 0) or FAILED. */
int shared_image_end(struct shared_state *s, uint32_t id, int error, uint64_t bytes, uint64_t usec,
		     uint64_t deadline_ms);

/* Master: the task of DONE record `id` was resumed (RESUME succeeded). */
int shared_image_resumed(struct shared_state *s, uint32_t id, uint64_t deadline_ms);

/* A copy slot (index in *slot), waiting until deadline_ms (CLOCK_REALTIME, ms). */
int shared_copy_slot_take(struct shared_state *s, uint64_t deadline_ms, int *slot);
void shared_copy_slot_put(struct shared_state *s, int slot);

/* Snapshot of a record (under the lock); -ENOENT if unknown. */
int shared_image_get(struct shared_state *s, uint32_t id, struct shared_image *out,
		     uint64_t deadline_ms);

/* Task: NONE -> OFFERED with the manifest's fd (pid from shared_image_begin()). */
int shared_handoff_offer(struct shared_state *s, uint32_t id, int manifest_fd,
			 uint64_t deadline_ms);
/*
 * Task: waits until the copier has answered: TAKEN or REFUSED; past
 * offer_deadline_ms a still OFFERED handoff becomes CANCELLED (returned);
 * one the copier is TAKING is waited for until hard_deadline_ms (-ETIMEDOUT).
 */
int shared_handoff_settle(struct shared_state *s, uint32_t id, uint64_t offer_deadline_ms,
			  uint64_t hard_deadline_ms, uint32_t *handoff);
/* Copier: the first OFFERED record, moved to TAKING (its id, pid, manifest fd); -ENOENT: none. */
int shared_handoff_next(struct shared_state *s, uint32_t *id, uint32_t *pid, int *manifest_fd,
			uint64_t deadline_ms);
/* Copier: TAKING -> TAKEN (taken) or REFUSED. */
int shared_handoff_answer(struct shared_state *s, uint32_t id, int taken, uint64_t deadline_ms);
/* Copier: TAKEN -> COPIED with its outcome. */
int shared_handoff_copied(struct shared_state *s, uint32_t id, int error, uint64_t bytes,
			  uint64_t usec, uint64_t deadline_ms);

/*
 * Master, before the fork: one more taker (an import or a dma-buf file) of
 * share_id, whose origin is in file origin_image: its PENDING record made
 * at the first, counted after. -E2BIG past SHARED_MAX_SHARES.
 */
int shared_share_add_taker(struct shared_state *s, uint32_t share_id, uint32_t origin_image);
/* Origin's task: PENDING -> PUBLISHED (rec: pid, fd, gpu_id, offset) or FAILED (error). */
int shared_share_publish(struct shared_state *s, uint32_t share_id, const struct shared_share *rec,
			 uint64_t deadline_ms);
int shared_share_fail(struct shared_state *s, uint32_t share_id, int error, uint64_t deadline_ms);
/* Importer: waits until the record is PUBLISHED or FAILED; its snapshot in *out. */
int shared_share_wait(struct shared_state *s, uint32_t share_id, struct shared_share *out,
		      uint64_t deadline_ms);
/* Importer: it has duplicated the published fd. */
int shared_share_took(struct shared_state *s, uint32_t share_id, uint64_t deadline_ms);
/* Origin's task: waits until every importer took the fd (-ETIMEDOUT past the deadline). */
int shared_share_wait_taken(struct shared_state *s, uint32_t share_id, uint64_t deadline_ms);
/* Snapshot of a record; -ENOENT if unknown. */
int shared_share_get(struct shared_state *s, uint32_t share_id, struct shared_share *out,
		     uint64_t deadline_ms);

/* Now + ms on CLOCK_REALTIME (the clock of pthread_mutex_timedlock), in ms. */
uint64_t shared_deadline(uint64_t ms_from_now);

#endif
