/* SPDX-License-Identifier: MIT */
/*
 * Restore of GPU files (docs/kfd-facts.md 6.2).
 *
 * The session starts in the CRIU master (the plugin's init hook), before any
 * task exists: it loads and validates every image of the checkpoint, checks
 * the local KFD (version; BO record layout, measured: kfd_probe.h), reads
 * the local topology and maps the checkpointed GPUs onto GPUs of this node
 * that can be used (KFD sees them and their render node opens). Any refusal
 * happens there, with the images untouched, so the restore can be retried on
 * another node.
 *
 * CRIU then forks the restored tasks; each inherits the session (a private
 * copy) and restores its own files in RESTORE_EXT_FILE: it checks the GPUs
 * it can see itself (a device cgroup may show it another subset: then it
 * maps onto those), opens /dev/kfd and the render nodes, RESTOREs, writes
 * the BO contents back and keeps what UPDATE_VMA_MAP needs. The master
 * RESUMEs each task at the end. What crosses processes is in
 * shared_state.h.
 */
#ifndef AMDGPU_CRIU_RESTORE_H
#define AMDGPU_CRIU_RESTORE_H

#include <stdbool.h>
#include <stdint.h>

#include "checkpoint/ckpt.h"
#include "plugin/copy_engines.h"
#include "images/kfd_image.h"
#include "options/options.h"
#include "plugin/restore/gem_restore.h"
#include "plugin/guardian.h"
#include "topology/match.h"
#include "plugin/restore/render_fds.h"
#include "plugin/restore/restore_copy.h"
#include "plugin/restore/shared_state.h"
#include "topology/topology.h"
#include "plugin/restore/vma_map.h"

/* What one task published for other tasks to import (restore_share.h; its fds closed by
 * restore_share_settle()). */
struct restore_share_task {
	uint32_t *share_ids;
	int *fds;
	uint32_t n;
};

struct restore_session {
	bool active; /* the checkpoint has GPU files */
	struct kfd_process_image *procs;
	size_t n_procs;
	struct render_file_image *renders;
	size_t n_renders;
	struct dmabuf_file_image *dmabufs; /* the application's dma-buf fds of KFD BOs */
	size_t n_dmabufs;
	struct ckpt hsakmt;	 /* the loader's libhsakmt images only, until they are applied */
	struct kfd_topology src; /* recorded GPUs and CPU nodes of all images */
	uint32_t *src_nodes;
	size_t n_src_nodes;
	struct kfd_topology dst; /* this node, as the CRIU master sees it */
	struct match_result map; /* checkpointed GPU -> local GPU */
	struct shared_state *shared;
	struct guardian guard;	      /* ends the tasks if the master dies (restore_guard.h) */
	struct amdgpu_options opts;   /* read once by the plugin, inherited by the tasks */
	bool parallel;		      /* tasks offer their BO contents to the copier */
	struct restore_copier copier; /* master only (its threads are not forked) */
	int kfd_fd; /* a kfd_dev reference for RESUME, taken at the first one; -1 */
	uint32_t resumed;

	/* state of one restored task (after the fork, private to it) */
	struct render_fds render;
	struct vma_map vmas;
	const struct kfd_process_image *task_image;
	struct match_result task_map;
	bool has_task_map;
	const struct kfd_process_image *targets_for; /* restore_choose_targets() done for it */
	bool confine_kfd;    /* KFD shows it more GPUs than the targets: kfd_confine.h */
	bool render_settled; /* render_fds_settle() done */
	struct restore_share_task share; /* dma-buf fds it published */
	struct vma_map gem_vmas;	 /* its render files' GEM BOs (gem_restore.h) */
};

/*
 * Master, init hook. 0 also when there is nothing to do (active false).
 * opts: the restore's options (copied); options_error: the one line that
 * reading them failed with ("" or NULL: none), which fails a restore with
 * GPU files only.
 */
int restore_session_init(struct restore_session *s, int dir_fd, const struct amdgpu_options *opts,
			 const char *options_error);
/* Master, exit hook: reports the tasks' outcomes and frees everything. */
void restore_session_fini(struct restore_session *s, int criu_ret);

/* RESTORE_EXT_FILE: an fd for the file, or -ENOTSUP if the id is not ours. */
int restore_file(struct restore_session *s, int dir_fd, uint32_t id);

/* UPDATE_VMA_MAP: 1 when the mapping was ours and moved, -ENOTSUP if not ours. */
int restore_vma(struct restore_session *s, const char *path, uint64_t addr, uint64_t old_pgoff,
		uint64_t *new_pgoff, int *plugin_fd);

/* RESUME_DEVICES_LATE for a restored task (pid in CRIU's namespace). */
int restore_resume(struct restore_session *s, int pid);

/*
 * Restored task (restore_targets.c). The local GPU a checkpointed GPU lands
 * on for this task (its own map when it sees other GPUs than the master;
 * the master's for a GPU its own lacks), or NULL.
 */
const struct match_pair *restore_target(const struct restore_session *s, uint32_t src_gpu_id);
/* This task's map onto the GPUs it can use (once per image); 0 or -errno, logged. */
int restore_choose_targets(struct restore_session *s, const struct kfd_process_image *img);
/*
 * Its /dev/kfd file for img, after restore_choose_targets(): confined to the
 * targets (kfd_confine.h) when the task may use more GPUs. fd or -errno, logged.
 */
int restore_open_kfd(struct restore_session *s, const struct kfd_process_image *img);

/* Shared by the master and the task parts (restore_session.c, restore_task.c). */
int restore_usable_gpus(const struct restore_session *s, const struct kfd_topology *t, bool in_task,
			uint32_t **nodes, size_t *n);
int restore_match(const struct match_checks *checks, const struct kfd_topology *src,
		  const uint32_t *src_nodes, size_t n_src, const struct kfd_topology *dst,
		  const uint32_t *dst_nodes, size_t n_dst, struct match_result *out);

#endif
