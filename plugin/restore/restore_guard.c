// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plugin/file_holder.h"
#include "plugin/restore/restore_guard.h"
#include "plugin/restore/shared_state.h"

struct mapping_id {
	uintptr_t start;
	char dev[16];
	unsigned long inode;
};

/* Does /proc/<who>/maps have a mapping starting at id->start (and, if set, same dev and inode)? */
static int find_mapping(const char *who, struct mapping_id *id, int fill)
{
	char path[64], line[512], dev[16];
	unsigned long inode;
	uintptr_t start;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/maps", who);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNxPTR "-%*x %*s %*x %15s %lu", &start, dev, &inode) != 3 ||
		    start != id->start)
			continue;
		if (fill) {
			snprintf(id->dev, sizeof(id->dev), "%s", dev);
			id->inode = inode;
			found = 1;
		} else {
			found = !strcmp(dev, id->dev) && inode == id->inode;
		}
	}
	fclose(f);
	return found;
}

/* One scan of /proc: SIGKILL to every other process mapping id. Returns how many. */
static int kill_mappers(const struct mapping_id *id)
{
	struct mapping_id probe = *id;
	struct dirent *de;
	int killed = 0;
	DIR *proc;

	proc = opendir("/proc");
	if (!proc)
		return 0;
	while ((de = readdir(proc))) {
		pid_t pid;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid = atoi(de->d_name);
		if (pid == getpid() || !find_mapping(de->d_name, &probe, 0))
			continue;
		if (!kill(pid, SIGKILL))
			killed++;
	}
	closedir(proc);
	return killed;
}

/* The NSpid of /proc/<pid>/status has one field only, equal to pid: it is in our namespace. */
static int own_ns_pid(pid_t pid)
{
	uint32_t innermost;

	return nspid_levels(pid, &innermost) == 1 && innermost == (uint32_t)pid;
}

/* Tasks whose file was restored and never resumed (the master is gone: no lock). */
static int kill_unresumed(const struct shared_state *s)
{
	uint32_t i, n = s->n_images < SHARED_MAX_IMAGES ? s->n_images : SHARED_MAX_IMAGES;
	int killed = 0;

	for (i = 0; i < n; i++) {
		const struct shared_image *img = &s->images[i];
		pid_t pid = (pid_t)img->pid;

		if (img->state != SHARED_IMAGE_DONE || img->resumed || pid <= 1 ||
		    pid == getpid() || !own_ns_pid(pid))
			continue;
		if (!kill(pid, SIGKILL))
			killed++;
	}
	return killed;
}

static int kill_unfinished_tasks(void *arg)
{
	struct mapping_id id = {.start = (uintptr_t)arg};
	struct timespec pause = {.tv_nsec = GUARD_KILL_POLL_MS * 1000000L};
	int round, n, total = 0, unresumed;

	if (!find_mapping("self", &id, 1)) {
		guardian_kmsg("amdgpu_plugin: criu died during the restore; its tasks cannot be "
			      "told apart (no shared mapping at %#" PRIxPTR "): end them by hand",
			      id.start);
		return 1;
	}
	/* tasks being forked meanwhile show up in later scans; killed ones vanish */
	for (round = 0; round < GUARD_KILL_ROUNDS; round++) {
		n = kill_mappers(&id);
		total += n;
		if (!n && round)
			break;
		nanosleep(&pause, NULL);
	}
	unresumed = kill_unresumed(arg);
	guardian_kmsg("amdgpu_plugin: criu died during the restore; killed %d restored tasks it "
		      "left half-way and %d whose GPU queues it never resumed (images untouched: "
		      "restore again)",
		      total, unresumed);
	return 0;
}

int restore_guard_start(struct guardian *g, struct shared_state *shared)
{
	return guardian_start(g, NULL, 0, kill_unfinished_tasks, shared);
}
