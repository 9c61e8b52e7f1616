// SPDX-License-Identifier: MIT
/* Does a task use a GPU (task_gpu.h). */
#include "plugin/dump/task_gpu.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errmsg.h"

/* ENOENT, ESRCH: the task exited between CRIU naming it and our look. */
static bool vanished(int err)
{
	return err == ENOENT || err == ESRCH;
}

static int scan_fds(const char *proc, pid_t pid, task_gpu_file_fn is_gpu, void *arg, char *err,
		    size_t errlen)
{
	char path[PATH_MAX];
	struct dirent *d;
	int ret = TASK_GPU_NONE;
	DIR *dir;

	snprintf(path, sizeof(path), "%s/%d/fd", proc, (int)pid);
	dir = opendir(path);
	if (!dir) {
		if (vanished(errno))
			return TASK_GPU_GONE;
		return errmsg_set(err, errlen, -errno, "pid %d: cannot list %s: %s", (int)pid, path,
				  strerror(errno));
	}
	while (ret == TASK_GPU_NONE && (d = readdir(dir))) {
		struct stat st;

		/* an fd closed meanwhile, or a file that cannot be stat'ed, is no GPU file */
		if (d->d_name[0] != '.' && !fstatat(dirfd(dir), d->d_name, &st, 0) &&
		    S_ISCHR(st.st_mode) && is_gpu(arg, st.st_rdev))
			ret = TASK_GPU_USES;
	}
	closedir(dir);
	return ret;
}

/* The path of a maps line (after five fields), or NULL. */
static const char *mapped_path(const char *line)
{
	int at = 0;

	if (sscanf(line, "%*x-%*x %*4s %*x %*x:%*x %*u %n", &at) < 0 || !at)
		return NULL;
	return line[at] == '/' ? line + at : NULL;
}

/* Device files are mapped by their /dev path: those are stat'ed and asked about. */
static bool mapped_gpu_file(const char *path, task_gpu_file_fn is_gpu, void *arg)
{
	struct stat st;

	if (strncmp(path, "/dev/", 5) || stat(path, &st))
		return false;
	return S_ISCHR(st.st_mode) && is_gpu(arg, st.st_rdev);
}

static int scan_maps(const char *proc, pid_t pid, task_gpu_file_fn is_gpu, void *arg, char *err,
		     size_t errlen)
{
	char path[PATH_MAX], line[PATH_MAX + 128];
	int ret = TASK_GPU_NONE;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d/maps", proc, (int)pid);
	f = fopen(path, "re");
	if (!f) {
		if (vanished(errno))
			return TASK_GPU_GONE;
		return errmsg_set(err, errlen, -errno, "pid %d: cannot read %s: %s", (int)pid, path,
				  strerror(errno));
	}
	while (ret == TASK_GPU_NONE && fgets(line, sizeof(line), f)) {
		const char *p = mapped_path(line);

		line[strcspn(line, "\n")] = '\0';
		if (p && mapped_gpu_file(p, is_gpu, arg))
			ret = TASK_GPU_USES;
	}
	if (ferror(f) && ret == TASK_GPU_NONE) /* ESRCH: reaped since the open */
		ret = errmsg_set(err, errlen, -EIO, "pid %d: cannot read %s", (int)pid, path);
	fclose(f);
	return ret;
}

int task_gpu_probe(const char *proc, pid_t pid, enum task_gpu_scope scope, task_gpu_file_fn is_gpu,
		   void *arg, char *err, size_t errlen)
{
	int ret = scan_fds(proc, pid, is_gpu, arg, err, errlen);

	if (ret == TASK_GPU_NONE && scope == TASK_GPU_FDS_AND_MAPS)
		ret = scan_maps(proc, pid, is_gpu, arg, err, errlen);
	if (ret < 0 && task_gpu_gone(proc, pid))
		ret = TASK_GPU_GONE;
	return ret;
}

bool task_gpu_gone(const char *proc, pid_t pid)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%d", proc, (int)pid);
	return access(path, F_OK) && vanished(errno);
}
