// SPDX-License-Identifier: MIT
/*
 * The dump session: its options, the local KFD and topology, which files
 * and tasks are GPU ones, and the per-task step before CRIU reads a task's
 * mappings (dump_session.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "common/escape.h"
#include "common/gpu_libs.h"
#include "datapath/bo_stream.h"
#include "plugin/dump/dump_session.h"
#include "plugin/dump/task_gpu.h"
#include "plugin/hsakmt_files.h"
#include "plugin/kfd_dev.h"
#include "plugin/log.h"

#define TASK_PROC "/proc"

int dump_session_init(struct dump_session *s, const struct amdgpu_options *opts,
		      const char *options_error)
{
	struct utsname u;

	memset(s, 0, sizeof(*s));
	s->dir_fd = -1;
	s->has_kfd = !kfd_dev_rdev(&s->kfd_rdev);
	if (!uname(&u))
		snprintf(s->release, sizeof(s->release), "%s", u.release);
	bo_share_init(&s->shares);
	bo_share_init(&s->gem_dmabufs);
	s->opts = *opts;
	render_audit_init(&s->audit, &s->opts);
	if (options_error && *options_error)
		snprintf(s->gpu_refusal, sizeof(s->gpu_refusal), "%s", options_error);
	if (s->gpu_refusal[0])
		pr_warn("%s; a dump without GPUs goes on, one with a GPU fails", s->gpu_refusal);
	s->paused = pause_list_new();
	return s->paused ? 0 : -ENOMEM;
}

int dump_meets_gpu(const struct dump_session *s)
{
	char why[512];
	int ret;

	if (s->gpu_refusal[0]) {
		pr_err("%s: the dump has a GPU in it; refused before anything was paused",
		       s->gpu_refusal);
		return -EINVAL;
	}
	ret = gpu_libs_load(why, sizeof(why));
	if (ret)
		pr_err("%s", why);
	return ret;
}

static bool task_file_is_gpu(void *arg, dev_t rdev)
{
	struct stat st = {.st_mode = S_IFCHR, .st_rdev = rdev};

	return dump_classify(arg, &st) != GPU_FILE_NONE;
}

int dump_gpu_task(struct dump_session *s, int pid, bool with_mappings)
{
	char why[512];
	int ret;

	if (!s->has_kfd)
		return 0;
	ret = task_gpu_probe(TASK_PROC, pid, with_mappings ? TASK_GPU_FDS_AND_MAPS : TASK_GPU_FDS,
			     task_file_is_gpu, s, why, sizeof(why));
	if (ret < 0) {
		pr_err("%s", why);
		return ret;
	}
	if (ret != TASK_GPU_USES)
		return 0;
	ret = dump_meets_gpu(s);
	return ret ? ret : 1;
}

bool dump_task_gone(int pid)
{
	return task_gpu_gone(TASK_PROC, pid);
}

void dump_session_fini(struct dump_session *s)
{
	pause_list_release(s->paused);
	s->paused = NULL;
	render_audit_fini(&s->audit);
	bo_share_fini(&s->shares);
	bo_share_fini(&s->gem_dmabufs);
	if (s->topo_loaded)
		topo_free(&s->topo);
	s->topo_loaded = false;
}

int dump_load_topology(struct dump_session *s)
{
	char why[512];
	int ret;

	if (s->topo_loaded)
		return 0;
	ret = topo_load(KFD_SYSFS_TOPOLOGY, &s->topo, why, sizeof(why));
	if (ret) {
		pr_err("cannot read the KFD topology: %s", why);
		return ret;
	}
	s->topo_loaded = true;
	return 0;
}

const struct kfd_node *dump_gpu_by_minor(const struct kfd_topology *t, uint32_t minor)
{
	size_t i;

	for (i = 0; i < t->n_nodes; i++) {
		const struct kfd_node *n = &t->nodes[i];

		if (n->accessible && n->is_gpu && kfd_prop_present(n, KFD_PROP_drm_render_minor) &&
		    kfd_prop_get(n, KFD_PROP_drm_render_minor) == minor)
			return n;
	}
	return NULL;
}

enum gpu_file_kind dump_classify(struct dump_session *s, const struct stat *st)
{
	if (!s->has_kfd || !S_ISCHR(st->st_mode))
		return GPU_FILE_NONE;
	if (st->st_rdev == s->kfd_rdev)
		return GPU_FILE_KFD;
	if (!kfd_is_render_rdev(st->st_rdev) || dump_load_topology(s))
		return GPU_FILE_NONE;
	return dump_gpu_by_minor(&s->topo, minor(st->st_rdev)) ? GPU_FILE_RENDER : GPU_FILE_NONE;
}

/*
 * CRIU's --prev-images-dir made a link "parent" in the image directory: the
 * BO contents are then incremental too. -1: none (a full dump).
 */
int dump_open_parent_dir(const struct dump_session *s)
{
	int fd = openat(s->dir_fd, "parent", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 && errno != ENOENT)
		pr_warn("the image directory's 'parent' link cannot be opened (%s): BO contents "
			"are dumped whole",
			strerror(errno));
	return fd;
}

int dump_hsakmt_files(struct dump_session *s, int dir_fd, int pid)
{
	struct hsakmt_dump_result res;
	char why[512];
	int ret;

	ret = dump_gpu_task(s, pid, true); /* libhsakmt's files are mapped */
	if (ret <= 0)
		return ret;
	ret = hsakmt_files_dump(&hsakmt_paths_default, pid, dir_fd, &res, why, sizeof(why));
	if (ret && dump_task_gone(pid)) {
		pr_info("pid %d exited during the dump: none of libhsakmt's files to record", pid);
		return 0;
	}
	if (ret) {
		pr_err("%s", why);
		return ret;
	}
	if (res.semaphore_unlinked)
		pr_info("pid %d created libhsakmt's semaphore: its name %s/%s is unlinked (as "
			"hsaKmtCloseKFD does) so that CRIU saves it with the process",
			pid, hsakmt_paths_default.shm_dir, hsakmt_paths_default.sem_name);
	if (res.recorded)
		pr_info("pid %d: %u of libhsakmt's shared files recorded, to be created at restore "
			"where missing",
			pid, res.recorded);
	return 0;
}
