/* SPDX-License-Identifier: MIT */
/*
 * A guardian that unpauses a paused KFD process if CRIU dies during the dump.
 *
 * Why: PROCESS_INFO stops the application's GPU queues and only UNPAUSE
 * starts them again (pause.h). The plugin sends UNPAUSE from its exit hook,
 * which CRIU never runs when it is killed (SIGKILL; CRIU 4.1.1 installs no
 * handler for SIGINT or SIGTERM in a dump either, so those end it the same
 * way). The tasks then run on (the kernel detaches them when their tracer
 * dies, the parasite returns to the application on its socket's EOF) but
 * their GPU work would never start again: a hang at the first GPU wait.
 *
 * How: right after PROCESS_INFO the plugin forks a small process (detached
 * from CRIU: its own session, SIGINT/SIGTERM/SIGHUP/SIGQUIT ignored, every
 * inherited fd closed but a duplicate of the target's /dev/kfd file, the read
 * end of a "done" pipe and the write end of an "exit" pipe). Only CRIU holds
 * the done pipe's write end (close-on-exec), so when CRIU ends, however, the
 * guardian reads EOF. With a "stand down" byte first (the plugin's own
 * UNPAUSE ran) it exits. Without one, CRIU died: KFD takes CRIU ops on a
 * process's file only from the owner or its ptracer (kfd_chardev.c,
 * kfd-criu-abi.md 1.3), so the guardian waits until the kernel has detached
 * the dead CRIU (PTRACE_SEIZE fails with EPERM until then), seizes the
 * application's thread-group leader, sends UNPAUSE and exits (which detaches
 * it again), logging one line to the kernel log (/dev/kmsg).
 *
 * Needs CAP_SYS_PTRACE (as CRIU does) for the seize; a seize does not stop
 * the application. The guardian gives up after GUARD_SEIZE_WAIT_MS.
 */
#ifndef AMDGPU_CRIU_DUMP_GUARD_H
#define AMDGPU_CRIU_DUMP_GUARD_H

#include <stdint.h>
#include <sys/types.h>

#define GUARD_SEIZE_WAIT_MS 30000
#define GUARD_EXIT_WAIT_MS  5000

struct dump_guard {
	int done_fd; /* write end of the done pipe (CRIU's only); -1: no guardian */
	int exit_fd; /* read end of the exit pipe: EOF once the guardian has ended */
};

#define DUMP_GUARD_NONE ((struct dump_guard){.done_fd = -1, .exit_fd = -1})

/*
 * Starts the guardian of the paused KFD process behind kfd_fd, whose
 * thread-group leader is `leader` (a PID of the caller's namespace), tagged
 * `ns_pid` in its log line. 0 or -errno (nothing started).
 */
int dump_guard_start(struct dump_guard *g, int kfd_fd, pid_t leader, uint32_t ns_pid);

/*
 * The plugin unpaused the process itself: the guardian exits. Waits (at most
 * GUARD_EXIT_WAIT_MS) until it has, so that its copy of the /dev/kfd file is
 * gone before CRIU kills or releases the tasks. No-op without a guardian.
 */
void dump_guard_stand_down(struct dump_guard *g);

#endif
