/* SPDX-License-Identifier: MIT */
/*
 * Restore of KFD BOs that are one buffer (bo_share.h): each import is made
 * an import again of its origin, the BO of the same share_id that is not
 * an import, once the origin's process is RESTOREd.
 *
 * KFD's RESTORE cannot import: it allocates every BO of the blob, so an
 * import first comes back as a private BO. The importing task then unmaps
 * and frees it and imports the origin's dma-buf at the same VA
 * (AMDKFD_IOC_IMPORT_DMABUF), maps it on the GPUs it was mapped on, and
 * uses the origin's new mmap offset for the application's CPU mappings (an
 * import of another GPU's BO, a GTT BO of its own GPU, has no offset KFD
 * tells: CPU mappings of it cannot be restored).
 * The application keeps its KFD handle: IMPORT takes the lowest free idr
 * slot, so every free slot below the old one is filled with a 4 KiB GTT BO
 * first (freed right after), and the handle KFD gives is checked.
 *
 * An application's dma-buf fd of a KFD BO (dmabuf_file_entry) is restored
 * the same way: an fd of the BO's new dma-buf, taken from the origin's task
 * (restore_share_file()).
 *
 * The hand-over crosses processes through shared_state.h's share records:
 * the master registers the shares (restore_share_prepare()), the origin's
 * task publishes an fd of the BO's dma-buf (restore_share_publish()), the
 * importer takes it with pidfd_getfd(), and the origin closes its fd once
 * every importer took it (restore_share_settle()). Every wait is bounded;
 * a failed origin fails its importers at once (restore_share_abort()).
 * With the parallel restore, an importer's RESUME also waits until the
 * master's copier has written its origins' contents
 * (restore_share_wait_origins()).
 */
#ifndef AMDGPU_CRIU_RESTORE_SHARE_H
#define AMDGPU_CRIU_RESTORE_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "images/kfd_image.h"
#include "plugin/kfd_ioctl.h"
#include "topology/match.h"

/* The session (restore.h) holds each task's struct restore_share_task. */
struct restore_session;

/*
 * Master, before the fork: each import's origin must be in the checkpoint,
 * once, on the same checkpointed GPU; registers one share record per origin
 * with importers. 0 or -errno (logged).
 */
int restore_share_prepare(struct restore_session *s);

/*
 * Origin's task, after RESTORE: publishes a dup of the dma-buf fd of each
 * of its BOs that others import (bos: RESTORE's answers, targets: the
 * local GPU per device).
 */
int restore_share_publish(struct restore_session *s, const struct kfd_process_image *img,
			  const struct kfd_criu_bo_bucket *bos, const struct match_pair **targets);

/*
 * Importing task, after RESTORE: each import made an import of its origin
 * again, same VA, handle and mappings; bos[i].restored_offset becomes the
 * origin's mmap offset.
 */
int restore_share_import(struct restore_session *s, const struct kfd_process_image *img, int kfd_fd,
			 struct kfd_criu_bo_bucket *bos, const struct match_pair **targets);

/*
 * RESTORE_EXT_FILE of a dma-buf file: an fd of its BO's new dma-buf, or
 * -errno (logged). own: the task's own process image with GPUs, or NULL.
 */
int restore_share_file(struct restore_session *s, const struct dmabuf_file_image *f,
		       const struct kfd_process_image *own);

/*
 * An import of another GPU's BO: KFD's IMPORT_DMABUF tells no mmap offset,
 * so an application's CPU mapping of it cannot be restored (a clear error
 * at UPDATE_VMA_MAP: no checkpointed BO there).
 */
#define RESTORE_SHARE_NO_OFFSET UINT64_MAX

/*
 * Whether BO i (an import) must stay out of the task's VMA map: its offset
 * is unknown, or its origin in the same process has the same one.
 */
bool restore_share_no_vma(const struct kfd_process_image *img, const struct kfd_criu_bo_bucket *bos,
			  size_t i);

/* A task whose restore failed: its origins not yet published fail, its fds close. */
void restore_share_abort(struct restore_session *s, const struct kfd_process_image *img, int error);

/* Origin's task, at its first UPDATE_VMA_MAP: waits for the importers, closes its fds. */
void restore_share_settle(struct restore_session *s);

/* Master, before RESUME of the process of image_id: its origins' contents are written. */
int restore_share_wait_origins(struct restore_session *s, uint32_t image_id, uint64_t deadline_ms);

#endif
