/* SPDX-License-Identifier: MIT */
/*
 * A guardian (guardian.h) that ends the half-restored tasks of a restore
 * whose CRIU master died (SIGKILL, SIGINT, SIGTERM: no hook runs then).
 *
 * Why: CRIU 4.1.1 does not arrange for the restored tasks to die with the
 * master (it sets no PDEATHSIG; it only restores the application's own in
 * the restorer). Tasks forked by a master that then dies wait for it in
 * their restore stages for ever, holding KFD processes with stopped queues
 * and the VRAM of their BOs: the "stuck for good" restore users of other GPU
 * checkpointers report.
 *
 * How: the master starts the guardian in the plugin's init hook, before any
 * task exists. Every task CRIU forks afterwards inherits the plugin's shared
 * mapping (shared_state.h) until its restorer replaces all its mappings with
 * the application's, just before the application runs. So a process that
 * still maps that very mapping (same address, same shmem inode) is a task of
 * this restore that has not finished; if the master ends without standing
 * the guardian down (its exit hook does, at the end of every restore,
 * successful or not), the guardian kills every such process (SIGKILL,
 * repeated until none is left, at most GUARD_KILL_ROUNDS scans) and says so
 * in the kernel log. Tasks past their restorer are left alone.
 */
#ifndef AMDGPU_CRIU_RESTORE_GUARD_H
#define AMDGPU_CRIU_RESTORE_GUARD_H

#include "guardian.h"

#define GUARD_KILL_ROUNDS  50
#define GUARD_KILL_POLL_MS 20

/* marker: the start of the shared mapping every restored task inherits. 0 or -errno. */
int restore_guard_start(struct guardian *g, const void *marker);

#endif
