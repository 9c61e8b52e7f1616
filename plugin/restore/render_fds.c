// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "plugin/file_holder.h"
#include "plugin/kfd_dev.h"
#include "plugin/restore/dev_nodes.h"
#include "plugin/restore/render_fds.h"

int render_fd_move_high(int fd)
{
	struct rlimit rl;
	long base = RENDER_FD_BASE;
	int high;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    (long)(rl.rlim_cur / 2) < base)
		base = (long)(rl.rlim_cur / 2);
	high = fcntl(fd, F_DUPFD_CLOEXEC, (int)base);
	if (high < 0) {
		high = -errno;
		close(fd);
		return high;
	}
	close(fd);
	return high;
}

static struct render_fd *find(struct render_fds *t, uint32_t minor)
{
	unsigned int i;

	for (i = 0; i < t->n; i++)
		if (t->items[i].minor == minor)
			return &t->items[i];
	return NULL;
}

int render_fd_get(struct render_fds *t, uint32_t minor)
{
	struct render_fd *r = find(t, minor);
	int fd;

	if (r)
		return r->fd;
	if (t->n == RENDER_FDS_MAX)
		return -EMFILE;
	fd = render_node_open_task(minor, t->create_nodes);
	if (fd < 0)
		return fd;
	fd = render_fd_move_high(fd);
	if (fd < 0)
		return fd;
	t->items[t->n++] = (struct render_fd){.minor = minor, .fd = fd, .ours = true};
	return fd;
}

/* An fd of the task, other than `ours`, on the same open file; -1 if none. */
static int find_twin(int ours)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int found = -1, fd;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char *end;

		fd = (int)strtol(de->d_name, &end, 10);
		if (*end || end == de->d_name || fd == ours || fd == dirfd(d))
			continue;
		if (same_open_file(getpid(), ours, getpid(), fd)) {
			found = fd;
			break;
		}
	}
	closedir(d);
	return found;
}

int render_fd_for_mapping(struct render_fds *t, uint32_t minor)
{
	struct render_fd *r = find(t, minor);
	int twin;

	if (!r)
		return -ENOENT;
	if (r->ours) {
		twin = find_twin(r->fd);
		if (twin >= 0) {
			close(r->fd);
			r->fd = twin;
			r->ours = false;
		}
	}
	return r->fd;
}

void render_fds_settle(struct render_fds *t, bool (*needed)(uint32_t minor, void *arg), void *arg)
{
	unsigned int i, kept = 0;

	for (i = 0; i < t->n; i++) {
		struct render_fd *r = &t->items[i];

		if (r->ours)
			render_fd_for_mapping(t, r->minor);
		if (r->ours && !needed(r->minor, arg)) {
			close(r->fd);
			continue;
		}
		t->items[kept++] = *r;
	}
	t->n = kept;
}

void render_fds_close(struct render_fds *t)
{
	unsigned int i;

	for (i = 0; i < t->n; i++)
		if (t->items[i].ours)
			close(t->items[i].fd);
	t->n = 0;
}
