/* SPDX-License-Identifier: MIT */
/*
 * The dump of render-node files: the audit of every task's render files
 * before anything is dumped, and each file with its GEM BOs, in the dump
 * session (dump_session.h). Functions return 0 or -errno, and log their
 * one line.
 */
#ifndef AMDGPU_CRIU_PLUGIN_DUMP_DUMP_RENDER_H
#define AMDGPU_CRIU_PLUGIN_DUMP_DUMP_RENDER_H

#include <stdint.h>
#include <sys/stat.h>

#include "plugin/dump/dump_session.h"
#include "plugin/kfd_ioctl.h"

/*
 * CHECKPOINT_DEVICES, for every task of the frozen tree before any file is
 * dumped: refuses a task whose render-node files hold GPU memory that the
 * dump would lose (render_audit.h). A task without a GPU file, or one that
 * exited meanwhile, is left alone: 0. 0 or -errno, logged.
 */
int dump_render_audit(struct dump_session *s, int pid);

/*
 * DUMP_EXT_FILE for a render node (dump_render.c): its GPU, and its GEM BOs
 * where the kernel lists them (gem_dump.h). fd is the task's open file.
 */
int dump_render_file(struct dump_session *s, int fd, const struct stat *st, uint32_t id);

/*
 * A KFD BO of pid whose dma-buf is also a GEM BO saved before (a render
 * file's handle of a KFD BO): -EOPNOTSUPP, logged. 0 otherwise.
 */
int dump_check_gem_twins(struct dump_session *s, uint32_t pid, const struct kfd_criu_bo_bucket *bos,
			 uint32_t n_bos);

#endif
