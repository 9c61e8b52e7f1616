/* SPDX-License-Identifier: MIT */
/*
 * A guardian: a small process that outlives CRIU to undo what CRIU's death
 * would leave behind (a dump's paused GPU queues: dump_guard.h; a restore's
 * half-restored tasks: restore_guard.h).
 *
 * CRIU runs no plugin hook when it is killed (SIGKILL; CRIU 4.1.1 installs
 * no handler for SIGINT or SIGTERM in a dump or restore, so those end it the
 * same way). The guardian is forked from CRIU, detached (double fork: not
 * CRIU's child; its own session, so a terminal's SIGINT does not reach it;
 * SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1/2 ignored), keeps only
 * the fds it is given, its two pipe ends and a pidfd of CRIU, and waits.
 * Only CRIU holds the "done" pipe's write end (close-on-exec; restored tasks
 * close inherited fds first thing), so when CRIU ends, however, the guardian
 * reads EOF, or CRIU's pidfd says it has exited (should a child of CRIU still
 * hold a copy of the pipe): after a stand-down byte it exits; without one it
 * runs its `orphaned` callback, then exits. The guardian's exit closes the "exit" pipe, which
 * guardian_stand_down() waits for.
 */
#ifndef AMDGPU_CRIU_GUARDIAN_H
#define AMDGPU_CRIU_GUARDIAN_H

#include <stddef.h>

#define GUARDIAN_EXIT_WAIT_MS 5000

struct guardian {
	int done_fd; /* write end of the done pipe (CRIU's only); -1: no guardian */
	int exit_fd; /* read end of the exit pipe: EOF once the guardian has ended */
};

#define GUARDIAN_NONE ((struct guardian){.done_fd = -1, .exit_fd = -1})

/*
 * Forks the guardian. It keeps keep[0..n_keep-1] open (at most 4) and
 * calls orphaned(arg) if CRIU ends without guardian_stand_down(); its return
 * value is the guardian's exit status. 0 or -errno (nothing started).
 */
int guardian_start(struct guardian *g, const int *keep, size_t n_keep, int (*orphaned)(void *arg),
		   void *arg);

/*
 * CRIU finished the job: the guardian exits. Waits (GUARDIAN_EXIT_WAIT_MS at
 * most) until it has. No-op without a guardian.
 */
void guardian_stand_down(struct guardian *g);

/* One line into the kernel log (/dev/kmsg): the guardian's only way to report. */
void guardian_kmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
