/* SPDX-License-Identifier: MIT */
/*
 * The dump of /dev/kfd files and of the dma-bufs of their BOs, one CRIU
 * DUMP_EXT_FILE at a time, in the dump session (dump_session.h). Functions
 * return 0 or -errno, and log their one line.
 */
#ifndef AMDGPU_CRIU_PLUGIN_DUMP_DUMP_KFD_H
#define AMDGPU_CRIU_PLUGIN_DUMP_DUMP_KFD_H

#include <stdint.h>

#include "plugin/dump/dump_session.h"

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

#endif
