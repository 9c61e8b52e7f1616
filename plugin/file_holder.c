// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "plugin/file_holder.h"

int task_pidfd(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	return fd < 0 ? -errno : fd;
}

int task_fd_take(int pidfd, int fd)
{
	int ret = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);

	return ret < 0 ? -errno : ret;
}

int same_open_file(pid_t pa, int fa, pid_t pb, int fb)
{
	return syscall(SYS_kcmp, pa, pb, KCMP_FILE, fa, fb) == 0;
}

int nspid_levels(pid_t pid, uint32_t *innermost)
{
	char path[64], line[256];
	uint32_t last = 0;
	int levels = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + 6, *end;

		if (strncmp(line, "NSpid:", 6))
			continue;
		for (;;) {
			unsigned long v = strtoul(p, &end, 10);

			if (end == p)
				break;
			last = (uint32_t)v;
			levels++;
			p = end;
		}
		break;
	}
	fclose(f);
	if (innermost)
		*innermost = last;
	return levels;
}

uint32_t innermost_pid(pid_t pid)
{
	uint32_t last = 0;

	nspid_levels(pid, &last);
	return last;
}

/*
 * Does task `pid` hold our fd `ours`? Only kcmp: no stat or readlink of the
 * task's files, which could block on a file system served by a task that
 * CRIU has frozen.
 */
static int holds(int proc_fd, pid_t pid, int ours)
{
	struct dirent *de;
	int found = 0, dfd;
	char name[64];
	DIR *d;

	snprintf(name, sizeof(name), "%d/fd", (int)pid);
	dfd = openat(proc_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return 0;
	}
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		found = same_open_file(getpid(), ours, pid, atoi(de->d_name));
	}
	closedir(d);
	return found;
}

int find_second_file(int our_fd, const struct held_file *known, size_t n_known, size_t *which,
		     pid_t *holder)
{
	struct dirent *de;
	int found = 0;
	DIR *proc;
	size_t k;

	if (!n_known)
		return 0;
	proc = opendir("/proc");
	if (!proc)
		return -errno;
	while (!found && (de = readdir(proc))) {
		int holds_ours = -1; /* not asked yet */
		uint32_t ns_pid;
		pid_t pid;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid = atoi(de->d_name);
		if (pid == getpid()) /* our own copies (CRIU's, the plugin's) */
			continue;
		ns_pid = innermost_pid(pid);
		for (k = 0; !found && k < n_known; k++) {
			if (known[k].ns_pid != ns_pid || !holds(dirfd(proc), pid, known[k].fd))
				continue;
			if (holds_ours < 0)
				holds_ours = holds(dirfd(proc), pid, our_fd);
			if (holds_ours) {
				*which = k;
				*holder = pid;
				found = 1;
			}
		}
	}
	closedir(proc);
	return found;
}

int find_file_holder(int our_fd, uint32_t ns_pid, pid_t *holder)
{
	struct dirent *de;
	int found = 0;
	DIR *proc;
	pid_t pid;

	proc = opendir("/proc");
	if (!proc)
		return -errno;
	while (!found && (de = readdir(proc))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid = atoi(de->d_name);
		if (pid == getpid() || innermost_pid(pid) != ns_pid)
			continue;
		found = holds(dirfd(proc), pid, our_fd);
		if (found)
			*holder = pid;
	}
	closedir(proc);
	return found;
}
