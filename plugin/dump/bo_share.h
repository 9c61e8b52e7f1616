/* SPDX-License-Identifier: MIT */
/*
 * KFD BOs of the dumped tree that are one buffer.
 *
 * A process that imports another's BO (AMDKFD_IOC_IMPORT_DMABUF: ROCr's
 * dma-buf IPC, hipIpcOpenMemHandle) or imports one of its own on a second
 * GPU gets a KFD BO of its own that shares the exporter's pages. KFD's
 * CHECKPOINT reports it like any other BO, with no import flag, and its
 * RESTORE always allocates a new BO: restored as is, every sharer gets a
 * private copy, and a write by one is no longer seen by the others.
 *
 * What tells them apart: CHECKPOINT hands over a dma-buf of each BO with
 * contents, and a BO has one dma-buf (amdgpu keeps it in kgd_mem->dmabuf,
 * an import keeps the exporter's), so two buckets whose dma-bufs are the
 * same inode are one buffer. The table lives in the CRIU master for one
 * dump, across all the processes it checkpoints; the inodes stay unique
 * while the frozen processes keep their BOs.
 *
 * Every BO with contents gets the number of its dma-buf in the dump
 * (share_id, 1, 2, ... in the order met); a later BO with the same one is
 * an import of the first, the origin, and the restore makes it one again
 * (restore_share.h), on its GPU or another (an import on another GPU is a
 * GTT BO there). The first BO of a dma-buf must be the exporter's: one on
 * another GPU than the dma-buf's (GET_DMABUF_INFO) is refused.
 *
 * Policy (AMDGPU_CRIU_SHARED_BO, options.h): "share" (default) as above; "refuse"
 * fails the dump on any second sharer; "copy" lets every sharer through as
 * a BO of its own, with a warning, for users who accept private copies
 * (data nobody writes any more).
 */
#ifndef AMDGPU_CRIU_BO_SHARE_H
#define AMDGPU_CRIU_BO_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/kfd_ioctl.h>

#include "options/options.h"

/* One BO as the dump saw it. */
struct bo_share_bo {
	uint32_t pid;	 /* PROCESS_INFO's pid */
	uint32_t gpu_id; /* user gpu_id */
	uint32_t actual_gpu_id;
	uint64_t addr, size;
	uint32_t alloc_flags;
};

struct bo_share_table {
	void *root;    /* tsearch(3) tree of struct bo_share_seen, by (dev, ino) */
	size_t n;      /* distinct dma-bufs */
	size_t shared; /* buckets that were a second sharer */
};

/* One CHECKPOINT's answers. */
struct bo_share_process {
	uint32_t pid;
	const struct kfd_criu_device_bucket *devices;
	uint32_t n_devices;
	const struct kfd_criu_bo_bucket *bos;
	uint32_t n_bos;
};

void bo_share_init(struct bo_share_table *t);
void bo_share_fini(struct bo_share_table *t);

/*
 * Records the BO whose dma-buf is (dev, ino); *share_id is that dma-buf's
 * number. 0 if the dma-buf is new; -EEXIST with *first the BO that had it
 * first (owned by the table); -ENOMEM.
 */
int bo_share_add(struct bo_share_table *t, dev_t dev, ino_t ino, const struct bo_share_bo *bo,
		 const struct bo_share_bo **first, uint32_t *share_id);

/* The same for a dma-buf fd (fstat); -errno if it cannot be read. */
int bo_share_add_fd(struct bo_share_table *t, int dmabuf_fd, const struct bo_share_bo *bo,
		    const struct bo_share_bo **first, uint32_t *share_id);

/* The number of the dma-buf (dev, ino) and its first BO; -ENOENT if no BO had it. */
int bo_share_find(const struct bo_share_table *t, dev_t dev, ino_t ino, uint32_t *share_id,
		  const struct bo_share_bo **first);

/*
 * The dump's part for one checkpointed process: every BO with a dma-buf
 * numbered (share_ids[i]; 0 under the copy policy), a later sharer marked
 * an import (imports[i]) or refused as the policy says, a first BO on
 * another GPU than its dma-buf's (KFD's GET_DMABUF_INFO) refused. Arrays of
 * p->n_bos. 0 or -errno, logged in one line.
 */
int bo_share_note_process(struct bo_share_table *t, enum bo_share_policy policy,
			  const struct bo_share_process *p, uint32_t *share_ids, bool *imports);

/* Whether fd is a dma-buf (its file system's magic). */
bool bo_share_is_dmabuf(int fd);

/* The one line that names a shared buffer (`second` the BO just seen). */
void bo_share_describe(const struct bo_share_bo *first, const struct bo_share_bo *second, char *buf,
		       size_t len);

#endif
