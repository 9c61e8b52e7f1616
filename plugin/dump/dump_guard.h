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
 * How: right after PROCESS_INFO the plugin starts a guardian (guardian.h)
 * holding a duplicate of the target's /dev/kfd file. If CRIU dies before the
 * plugin's exit hook has sent UNPAUSE and stood it down: KFD takes CRIU ops
 * on a process's file only from the owner or its ptracer (kfd_chardev.c,
 * docs/kfd-facts.md 1.3), so the guardian waits until the kernel has detached
 * the dead CRIU (PTRACE_SEIZE fails with EPERM until then), seizes the
 * application's thread-group leader (which does not stop it), sends UNPAUSE
 * and exits (which detaches it again), with one line in the kernel log.
 * Needs CAP_SYS_PTRACE, as CRIU does; gives up after GUARD_SEIZE_WAIT_MS.
 */
#ifndef AMDGPU_CRIU_DUMP_GUARD_H
#define AMDGPU_CRIU_DUMP_GUARD_H

#include <stdint.h>
#include <sys/types.h>

#include "plugin/guardian.h"

#define GUARD_SEIZE_WAIT_MS 30000

/*
 * Starts the guardian of the paused KFD process behind kfd_fd, whose
 * thread-group leader is `leader` (a PID of the caller's namespace), named
 * `ns_pid` in its log line. 0 or -errno (nothing started). The exit hook
 * stands it down (guardian_stand_down()) after its own UNPAUSE.
 */
int dump_guard_start(struct guardian *g, int kfd_fd, pid_t leader, uint32_t ns_pid);

#endif
