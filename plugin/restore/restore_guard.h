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
 * task exists. If the master ends without standing it down (its exit hook
 * does, at the end of every restore, successful or not), the guardian kills
 * (SIGKILL) and says so in the kernel log:
 * - every process that still maps the plugin's shared mapping (same address,
 *   same shmem inode; shared_state.h): every task CRIU forked inherits it
 *   and keeps it until its restorer replaces all its mappings with the
 *   application's, so these are the tasks of this restore not yet past
 *   their restorer (scans repeated until none is left, at most
 *   GUARD_KILL_ROUNDS);
 * - every task whose /dev/kfd file was restored (DONE in the shared state)
 *   but whose RESUME the master never did: it would run with its GPU
 *   queues stopped. Found by its PID, when it is in the guardian's own PID
 *   namespace (a task in a nested one that is past its restorer is beyond
 *   its reach: a limit).
 */
#ifndef AMDGPU_CRIU_RESTORE_GUARD_H
#define AMDGPU_CRIU_RESTORE_GUARD_H

#include "plugin/guardian.h"

#define GUARD_KILL_ROUNDS  50
#define GUARD_KILL_POLL_MS 20

struct shared_state;

/* shared: the restore's shared state, which every restored task inherits. 0 or -errno. */
int restore_guard_start(struct guardian *g, struct shared_state *shared);

#endif
