// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/dump/dump_guard.h"
#include "plugin/file_holder.h"
#include "plugin/kfd_ioctl.h"
#include "plugin/log.h"
#include "plugin/dump/pause.h"

struct paused {
	int fd; /* our duplicate of the target's /dev/kfd file */
	uint32_t file_id;
	uint32_t pid; /* as PROCESS_INFO saw it */
	struct guardian guard;
};

struct pause_list {
	struct paused *items;
	size_t n, cap;
};

struct pause_list *pause_list_new(void)
{
	return calloc(1, sizeof(struct pause_list));
}

static int reserve(struct pause_list *list)
{
	struct paused *grown;
	size_t cap;

	if (list->n < list->cap)
		return 0;
	cap = list->cap ? list->cap * 2 : 4;
	grown = realloc(list->items, cap * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	list->items = grown;
	list->cap = cap;
	return 0;
}

/*
 * -EEXIST (logged) when target_fd is a second /dev/kfd file of a KFD process
 * paused already: its holder is the process PROCESS_INFO named then.
 */
static int check_second_file(const struct pause_list *list, int target_fd, uint32_t file_id)
{
	struct held_file *known = calloc(list->n + 1, sizeof(*known));
	size_t i, which = 0;
	pid_t holder = 0;
	int ret;

	if (!known)
		return -ENOMEM;
	for (i = 0; i < list->n; i++)
		known[i] =
			(struct held_file){.fd = list->items[i].fd, .ns_pid = list->items[i].pid};
	ret = find_second_file(target_fd, known, list->n, &which, &holder);
	free(known);
	if (ret < 0) {
		pr_err("cannot tell whose /dev/kfd file %u is (/proc: %s)", file_id,
		       strerror(-ret));
		return ret;
	}
	if (!ret)
		return 0;
	pr_err("pid %d has a second /dev/kfd file (file %u) of its KFD process, which was "
	       "checkpointed through file %u: KFD cannot checkpoint a process twice; open "
	       "/dev/kfd once per process (as ROCm does)",
	       (int)holder, file_id, list->items[which].file_id);
	return -EEXIST;
}

/* A guardian for p (dump_guard.h); without one the dump goes on, with a warning. */
static void guard(struct paused *p)
{
	pid_t leader = 0;
	int ret;

	p->guard = GUARDIAN_NONE;
	ret = find_file_holder(p->fd, p->pid, &leader);
	if (ret == 1)
		ret = dump_guard_start(&p->guard, p->fd, leader, p->pid);
	else if (!ret)
		ret = -ESRCH;
	if (ret)
		pr_warn("pid %u (file %u): no guardian (%s): if criu is killed before the dump "
			"ends, the process's GPU queues stay stopped",
			p->pid, p->file_id, strerror(-ret));
}

int pause_process(struct pause_list *list, int target_fd, uint32_t file_id,
		  struct kfd_ioctl_criu_args *args)
{
	int dup_fd, ret;

	ret = check_second_file(list, target_fd, file_id);
	if (ret)
		return ret;
	/* room first: once paused, tracking must not fail */
	ret = reserve(list);
	if (ret)
		return ret;
	dup_fd = fcntl(target_fd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd < 0)
		return -errno;
	memset(args, 0, sizeof(*args));
	args->op = KFD_CRIU_OP_PROCESS_INFO;
	ret = kfd_criu_op(dup_fd, args);
	if (ret) {
		close(dup_fd);
		return ret;
	}
	list->items[list->n] = (struct paused){.fd = dup_fd, .file_id = file_id, .pid = args->pid};
	guard(&list->items[list->n++]);
	return 0;
}

int pause_list_release(struct pause_list *list)
{
	struct kfd_ioctl_criu_args args;
	int failed = 0, ret;
	size_t i;

	if (!list)
		return 0;
	for (i = 0; i < list->n; i++) {
		struct paused *p = &list->items[i];

		memset(&args, 0, sizeof(args));
		args.op = KFD_CRIU_OP_UNPAUSE;
		ret = kfd_criu_op(p->fd, &args);
		if (ret) {
			pr_err("cannot unpause the GPU queues of pid %u (file %u): %s; the "
			       "application's GPU work stays stopped: restart it, or dump and "
			       "restore it",
			       p->pid, p->file_id, strerror(-ret));
			failed++;
		} else {
			pr_info("unpaused the GPU queues of pid %u (file %u)", p->pid, p->file_id);
		}
		guardian_stand_down(&p->guard);
		close(p->fd);
	}
	free(list->items);
	free(list);
	return failed;
}
