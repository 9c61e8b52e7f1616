/* SPDX-License-Identifier: MIT */
/*
 * Checkpoint of the GPU files of the dumped tasks (kfd-criu-abi.md 6.1).
 *
 * A dump session lives from the plugin's init to its exit hook at the dump
 * stage. It holds the local topology (read once), the KFD version check and
 * the list of paused KFD processes (pause.h), which the exit hook unpauses.
 */
#ifndef AMDGPU_CRIU_DUMP_H
#define AMDGPU_CRIU_DUMP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "bo_share.h"
#include "copy_engines.h"
#include "pause.h"
#include "render_audit.h"
#include "topology.h"

struct dump_session {
	int dir_fd; /* CRIU's image directory (CRIU owns it) */
	bool has_kfd;
	dev_t kfd_rdev;
	bool topo_loaded;
	struct kfd_topology topo;
	uint32_t kfd_major, kfd_minor; /* 0.0 until checked */
	char release[65];
	struct pause_list *paused;
	struct copy_engine_opts engine_opts; /* read once, at init */
	struct render_audit audit;	     /* render-node files of the tree (render_audit.h) */
	struct bo_share_table shares;	     /* dma-bufs of the BOs checkpointed so far */
	/* dma-bufs of the GEM BOs saved so far (gem_bos.h); pid: the render file's id, addr: the
	 * GEM handle */
	struct bo_share_table gem_dmabufs;
	enum bo_share_policy share_policy;
	/* non-empty: an option means nothing (this line); every GPU the dump meets is refused */
	char gpu_refusal[512];
};

enum gpu_file_kind {
	GPU_FILE_NONE,	 /* not ours: -ENOTSUP to CRIU */
	GPU_FILE_KFD,	 /* /dev/kfd */
	GPU_FILE_RENDER, /* the render node of a KFD GPU */
};

/*
 * options_error: the options file's one-line error, or "" / NULL. The options
 * are read here, once; one that means nothing does not fail the session (a
 * dump without GPUs goes on, with one warning) but refuses the first GPU the
 * dump meets (dump_meets_gpu()). -ENOMEM only.
 */
int dump_session_init(struct dump_session *s, const char *options_error);
/*
 * Every hook that meets a GPU calls this first: -EINVAL (logged) when the
 * options meant nothing; else the GPU libraries are loaded (gpu_libs.h),
 * -ELIBACC (logged) if they cannot be.
 */
int dump_meets_gpu(const struct dump_session *s);
/*
 * 1 if task pid has a GPU file of ours open or mapped (task_gpu.h); 0 if not,
 * or if it exited meanwhile; -errno, logged, if it could not be looked at.
 */
int dump_task_uses_gpu(struct dump_session *s, int pid);
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

/*
 * CHECKPOINT_DEVICES, for every task of the frozen tree before any file is
 * dumped: refuses a task whose render-node files hold GPU memory that the
 * dump would lose (render_audit.h). A task without a GPU file, or one that
 * exited meanwhile, is left alone: 0. 0 or -errno, logged.
 */
int dump_render_audit(struct dump_session *s, int pid);

/*
 * DUMP_EXT_FILE for /dev/kfd: PROCESS_INFO, CHECKPOINT, the render-node
 * memory check against the process's KFD BOs, the check for BOs that are
 * one buffer with a BO checkpointed before (bo_share.h), images, BO
 * contents.
 */
int dump_kfd_file(struct dump_session *s, int fd, uint32_t id);

/*
 * DUMP_EXT_FILE for a dma-buf: one of a KFD BO checkpointed before in this
 * dump is recorded by its share_id (bo_share.h); any other is refused.
 */
int dump_dmabuf_file(struct dump_session *s, int fd, uint32_t id);

/*
 * DUMP_EXT_FILE for a render node (dump_render.c): its GPU, and its GEM BOs
 * where the kernel lists them (gem_bos.h). fd is the task's open file.
 */
int dump_render_file(struct dump_session *s, int fd, const struct stat *st, uint32_t id);

/* Shared by dump.c and dump_render.c. */
int dump_load_topology(struct dump_session *s);
const struct kfd_node *dump_gpu_by_minor(const struct kfd_topology *t, uint32_t minor);
/* CRIU's --prev-images-dir link "parent" (incremental contents), or -1 (a full dump). */
int dump_open_parent_dir(const struct dump_session *s);
/*
 * A KFD BO of pid whose dma-buf is also a GEM BO saved before (a render
 * file's handle of a KFD BO): -EOPNOTSUPP, logged. 0 otherwise.
 */
int dump_check_gem_twins(struct dump_session *s, uint32_t pid, const struct kfd_criu_bo_bucket *bos,
			 uint32_t n_bos);

#endif
