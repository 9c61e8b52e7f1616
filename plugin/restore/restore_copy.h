/* SPDX-License-Identifier: MIT */
/*
 * Writing a restored process's BO contents, by the task itself or, in
 * parallel restore, by the CRIU master's copier while CRIU goes on
 * restoring the task's memory (the idea of upstream's parallel restore,
 * without its dependence on CRIU 4.2's POST_FORKING hook).
 *
 * Why the master: a task must return from RESTORE_EXT_FILE before CRIU
 * restores its memory, and it cannot keep a thread of ours (CRIU's restorer
 * replaces its whole address space). The master can: its copier thread is
 * started in the init hook, before CRIU forks any task.
 *
 * Protocol (what crosses processes is in shared_state.h): the task writes a
 * manifest of its BOs (per GPU the engine's needs; per BO its size, dma-buf
 * fd number, render-node fd number and mmap offset) into a memfd and offers
 * it. The copier finds the task in its own PID namespace (NSpid, and a
 * descendant of the master), duplicates the manifest and every fd it names
 * with pidfd_getfd(), and answers TAKEN; the task then closes its own
 * copies and returns. The copier writes the contents exactly as the task
 * would (same engines, same checksums, same copy slots) and records the
 * outcome; the master's RESUME of that task waits for it and fails the
 * restore (killing the task) if the copy failed. A copier that cannot take
 * an offer (no pidfd_getfd: Linux < 5.6, a task it cannot find) refuses it,
 * and a task whose offer is not answered within RESTORE_COPY_OFFER_WAIT_MS
 * withdraws it: either way the task copies itself, as without parallel
 * restore.
 *
 * AMDGPU_CRIU_PARALLEL_RESTORE (CRIU's environment): 1 (default) or 0 (every
 * task copies its own contents, before CRIU restores its memory).
 *
 * The copier thread never writes CRIU's log (not thread-safe): its lines go
 * to a sink that the master's main thread replays (restore_copier_wait(),
 * restore_copier_stop()).
 */
#ifndef AMDGPU_CRIU_PLUGIN_RESTORE_COPY_H
#define AMDGPU_CRIU_PLUGIN_RESTORE_COPY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "datapath/bo_copy_render.h"
#include "datapath/bo_stream.h"
#include "plugin/copy_engines.h"
#include "plugin/log.h"
#include "plugin/restore/shared_state.h"

#define RESTORE_COPY_OFFER_WAIT_MS (10 * 1000)
/* Processes whose contents the copier writes at once (each also needs a copy slot). */
#define RESTORE_COPY_WORKERS 2

/* One process's contents: per GPU its engine's needs, its streams and render engine. */
struct restore_copy_set {
	uint32_t image_id;
	uint32_t pid; /* the checkpointed pid, for messages */
	uint32_t n;   /* GPUs */
	struct copy_gpu *copy;
	struct bo_stream_gpu *gpus;
	struct bo_render_engine *engines;
};

/*
 * Closes every dma-buf fd of the set still open, finishes its render
 * engines (not the drm fds they name: the caller's), frees its arrays.
 */
void restore_copy_set_free(struct restore_copy_set *set);

/*
 * Writes the set's contents: engines (SDMA where it can be had), a copy
 * slot, bo_stream_restore(), engines closed (their figures logged). Logs
 * one line on failure. *bytes: the contents' size.
 */
int restore_copy_run(const struct copy_engine_opts *opts, struct shared_state *sh, int dir_fd,
		     struct restore_copy_set *set, uint64_t *bytes);

/*
 * Task: offers the set to the master's copier. 0: taken (the caller closes
 * its fds, the copier has its own); -EAGAIN: refused or not answered in
 * time, the caller copies; other -errno: the shared state failed.
 */
int restore_copy_offer(struct shared_state *sh, const struct restore_copy_set *set);

struct restore_copier {
	bool running;
	int stop; /* atomic: the threads end */
	int dir_fd;
	struct shared_state *sh;
	struct copy_engine_opts opts;
	pthread_t taker, workers[RESTORE_COPY_WORKERS];
	unsigned int n_workers;
	pthread_mutex_t lock; /* queue, log */
	pthread_cond_t queued;
	struct copier_job *head, *tail; /* taken, not yet copied */
	struct log_sink log;		/* the threads' lines, for the main thread */
};

/* Master, init hook: starts the copier (dir_fd is duplicated). */
int restore_copier_start(struct restore_copier *c, struct shared_state *sh, int dir_fd,
			 const struct copy_engine_opts *opts);
/*
 * Master, RESUME: waits until image id's contents are written if it was
 * handed off (0 at once otherwise), replaying the copier's log; the copy's
 * outcome (-errno).
 */
int restore_copier_wait(struct restore_copier *c, uint32_t id, uint64_t deadline_ms);
/* Master, exit hook: lets queued copies finish, joins, replays the log. */
void restore_copier_stop(struct restore_copier *c);

#endif
