/* SPDX-License-Identifier: MIT */
/*
 * Does a task of the dumped tree use a GPU?
 *
 * Installed in /usr/lib/criu, the plugin runs for every task CRIU seizes on
 * the host, GPU or not: its per-task dump hooks (PAUSE_DEVICES,
 * CHECKPOINT_DEVICES) ask this first and do nothing for a task that does not.
 * A task uses a GPU when one of its fds, or one of its mappings (a file
 * closed after mmap stays in use), is a character device that `is_gpu`
 * says is ours (/dev/kfd, the render node of a KFD GPU).
 *
 * A task that has exited meanwhile is TASK_GPU_GONE, not an error: CRIU
 * itself treats a task that vanished during the seize as harmless (a child
 * of a server that ignores SIGCHLD is reaped at once). A zombie has no fds
 * and no mappings: TASK_GPU_NONE.
 *
 * No state; any thread.
 */
#ifndef AMDGPU_CRIU_TASK_GPU_H
#define AMDGPU_CRIU_TASK_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum task_gpu { TASK_GPU_NONE, TASK_GPU_USES, TASK_GPU_GONE };

/* Is the character device rdev a GPU file of ours? */
typedef bool (*task_gpu_file_fn)(void *arg, dev_t rdev);

/* What to look at: the fds only (cheaper), or the mappings too. */
enum task_gpu_scope { TASK_GPU_FDS, TASK_GPU_FDS_AND_MAPS };

/*
 * proc: "/proc" (a test's directory). A TASK_GPU_* value, or -errno with one
 * line in err when the task could not be looked at (and still exists).
 */
int task_gpu_probe(const char *proc, pid_t pid, enum task_gpu_scope scope, task_gpu_file_fn is_gpu,
		   void *arg, char *err, size_t errlen);

/* Did the task exit (its /proc entry is gone)? For errors met after the probe. */
bool task_gpu_gone(const char *proc, pid_t pid);

#endif
