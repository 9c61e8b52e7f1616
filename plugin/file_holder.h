/* SPDX-License-Identifier: MIT */
/*
 * Which task holds an open file (struct file identity, kcmp KCMP_FILE),
 * found through /proc. CRIU's DUMP_EXT_FILE hook gets an fd but not the
 * task it came from.
 *
 * Why the dump needs it: KFD keeps one process per address space, so a task
 * that opened /dev/kfd twice has two files but one KFD process, and a second
 * PROCESS_INFO on it would count a second eviction that the one UNPAUSE does
 * not undo: the application's queues would stay stopped after the dump
 * (docs/kfd-facts.md 3.2). ROCm opens /dev/kfd once per process; the dump
 * refuses a second file of an already paused process before calling
 * PROCESS_INFO on it.
 */
#ifndef AMDGPU_CRIU_FILE_HOLDER_H
#define AMDGPU_CRIU_FILE_HOLDER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The NSpid line of /proc/PID/status for task `pid` (the caller's
 * namespace): returns how many PID namespaces deep the task is (its number
 * of NSpid fields; 1 = the caller's own namespace), 0 if it cannot be read;
 * *innermost (may be NULL) gets its PID in its own, innermost namespace.
 */
int nspid_levels(pid_t pid, uint32_t *innermost);

/*
 * The PID of task `pid` in its own, innermost PID namespace: the last NSpid
 * field (what KFD's PROCESS_INFO reports as the process's pid); 0 if it
 * cannot be read.
 */
uint32_t innermost_pid(pid_t pid);

/* pidfd_open(pid): a pidfd, or -errno. */
int task_pidfd(pid_t pid);
/* pidfd_getfd(): our duplicate (close-on-exec) of the task's fd `fd`, or -errno. */
int task_fd_take(int pidfd, int fd);

/* 1 if fd `fa` of task `pa` and fd `fb` of task `pb` are the same open file, else 0. */
int same_open_file(pid_t pa, int fa, pid_t pb, int fb);

/* A file we hold a copy of, and the process it belongs to (its PID in its own namespace). */
struct held_file {
	int fd;
	uint32_t ns_pid;
};

/*
 * Is our_fd held by a process, other than the caller, that also holds
 * known[k].fd and whose PID in its own (innermost) PID namespace is
 * known[k].ns_pid, for some k? Returns 1 (k in *which, the process's PID in
 * the caller's namespace in *holder), 0 if not, or a negative errno when
 * /proc cannot be read. One pass over /proc; processes that end meanwhile
 * are skipped.
 */
int find_second_file(int our_fd, const struct held_file *known, size_t n_known, size_t *which,
		     pid_t *holder);

/*
 * The process, other than the caller, that holds our_fd and whose PID in its
 * own namespace is ns_pid: its PID in the caller's namespace in *holder.
 * 1 found, 0 not, -errno when /proc cannot be read.
 */
int find_file_holder(int our_fd, uint32_t ns_pid, pid_t *holder);

#endif
