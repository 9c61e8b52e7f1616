/* SPDX-License-Identifier: MIT */
/*
 * The dump session (docs/kfd-facts.md 6.1).
 *
 * It lives from the plugin's init to its exit hook at the dump stage, in
 * the CRIU process (one thread calls it). It holds the options (read once
 * by the plugin, options/options.h), the local topology (read once), the KFD version check and the
 * list of paused KFD processes (pause.h), which the exit hook unpauses.
 * The files of the dumped tasks are dumped by dump_kfd.h (/dev/kfd, and
 * dma-bufs) and dump_render.h (render nodes), each given the session.
 */
#ifndef AMDGPU_CRIU_PLUGIN_DUMP_DUMP_SESSION_H
#define AMDGPU_CRIU_PLUGIN_DUMP_DUMP_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "plugin/dump/bo_share.h"
#include "plugin/copy_engines.h"
#include "plugin/dump/pause.h"
#include "plugin/dump/render_audit.h"
#include "options/options.h"
#include "topology/topology.h"

struct dump_session {
	int dir_fd; /* CRIU's image directory (CRIU owns it) */
	bool has_kfd;
	dev_t kfd_rdev;
	bool topo_loaded;
	struct kfd_topology topo;
	uint32_t kfd_major, kfd_minor; /* 0.0 until checked */
	char release[65];
	struct pause_list *paused;
	struct amdgpu_options opts;   /* the dump's options (a copy) */
	struct render_audit audit;    /* render-node files of the tree (render_audit.h) */
	struct bo_share_table shares; /* dma-bufs of the BOs checkpointed so far */
	/* dma-bufs of the GEM BOs saved so far (gem_dump.h); pid: the render file's id, addr: the
	 * GEM handle */
	struct bo_share_table gem_dmabufs;
	/* non-empty: the options could not be read (this line); every GPU the dump meets is refused
	 */
	char gpu_refusal[512];
};

enum gpu_file_kind {
	GPU_FILE_NONE,	 /* not ours: -ENOTSUP to CRIU */
	GPU_FILE_KFD,	 /* /dev/kfd */
	GPU_FILE_RENDER, /* the render node of a KFD GPU */
};

/*
 * opts: the dump's options (copied); options_error: the one line that
 * reading them failed with, or "" / NULL. That does not fail the session (a
 * dump without GPUs goes on, with one warning) but refuses the first GPU the
 * dump meets (dump_meets_gpu()). -ENOMEM only.
 */
int dump_session_init(struct dump_session *s, const struct amdgpu_options *opts,
		      const char *options_error);
/*
 * Every hook that meets a GPU calls this first: -EINVAL (logged) when the
 * options meant nothing; else the GPU libraries are loaded (gpu_libs.h),
 * -ELIBACC (logged) if they cannot be.
 */
int dump_meets_gpu(const struct dump_session *s);
/*
 * For the per-task hooks: 1 if task pid has a GPU file of ours open (or,
 * with_mappings, mapped: task_gpu.h) and the dump may go on with it
 * (dump_meets_gpu()); 0 if it has none, or exited meanwhile; -errno,
 * logged, if it could not be looked at or the dump may not go on.
 */
int dump_gpu_task(struct dump_session *s, int pid, bool with_mappings);
/* Did task pid exit (for an error met after dump_gpu_task())? */
bool dump_task_gone(int pid);
/* Unpauses everything paused, frees the session. */
void dump_session_fini(struct dump_session *s);

/* Which of our files the character device `st` is. */
enum gpu_file_kind dump_classify(struct dump_session *s, const struct stat *st);

/*
 * PAUSE_DEVICES, for every process of the tree before CRIU reads its
 * mappings: libhsakmt's shared files (hsakmt_files.h). A task without a GPU
 * file, or one that exited meanwhile, is left alone: 0. 0 or -errno, logged.
 */
int dump_hsakmt_files(struct dump_session *s, int dir_fd, int pid);

/* The local topology (read once) and its GPU of a render minor. */
int dump_load_topology(struct dump_session *s);
const struct kfd_node *dump_gpu_by_minor(const struct kfd_topology *t, uint32_t minor);
/* CRIU's --prev-images-dir link "parent" (incremental contents), or -1 (a full dump). */
int dump_open_parent_dir(const struct dump_session *s);
#endif
