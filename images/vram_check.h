/* SPDX-License-Identifier: MIT */
/*
 * Does the checkpoint's VRAM fit the local GPUs it was mapped onto? Asked by
 * the CRIU master before any task exists (plugin/restore/restore_session.c), so that
 * a node whose GPUs are too full refuses the restore in one line, with the
 * images untouched, instead of a RESTORE failing with ENOMEM half-way in a
 * restored task; and by `amdgpu-criu check` when it can open /dev/kfd.
 *
 * Need: per local GPU, the page-aligned sizes of the VRAM BOs that RESTORE
 * will allocate there, summed over every process of the checkpoint (KFD
 * reserves VRAM per BO at page granularity, amdgpu_amdkfd_reserve_mem_limit()).
 * Free: KFD's AVAILABLE_MEMORY (docs/kfd-facts.md 7.11) for that GPU, asked on
 * the master's own KFD process: the same accounting RESTORE's allocations are
 * checked against (what VRAM is left under the KFD limit, page tables
 * reserved, rounded down to 2 MiB). Another process may still take VRAM
 * between this check and the RESTORE: that fails with ENOMEM in the task, and
 * the restore leaves nothing behind (restore.h).
 */
#ifndef AMDGPU_CRIU_VRAM_CHECK_H
#define AMDGPU_CRIU_VRAM_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "images/kfd_image.h"
#include "topology/match.h"

/* Free VRAM in bytes of the local GPU `gpu_id`: 0 or -errno. */
typedef int (*vram_free_fn)(void *arg, uint32_t gpu_id, uint64_t *bytes);

struct vram_verdict {
	bool short_of;		/* some local GPU has less free VRAM than needed */
	struct match_pair pair; /* the first such GPU (when short_of) */
	uint64_t need, free;	/* its figures */
	size_t checked;		/* local GPUs whose free VRAM was read */
	size_t unchecked;	/* ... could not be read (free_fn failed) */
	uint32_t unchecked_gpu; /* the first of those, and why */
	int unchecked_err;
};

/*
 * VRAM the restore allocates on the target of map->map[i] (page-aligned
 * sizes of the VRAM BOs of every process device mapped there); 0 for a pair
 * without VRAM BOs.
 */
uint64_t vram_need_of(const struct kfd_process_image *procs, size_t n_procs,
		      const struct match_pair *pair);

/*
 * Compares need and free for each pair of map with VRAM to restore;
 * free_fn is asked once per such pair.
 */
void vram_check(const struct kfd_process_image *procs, size_t n_procs,
		const struct match_result *map, vram_free_fn free_fn, void *arg,
		struct vram_verdict *v);

/* KFD's AVAILABLE_MEMORY of gpu_id on the caller's /dev/kfd (arg: a pointer to the fd). */
int vram_kfd_free(void *arg, uint32_t gpu_id, uint64_t *bytes);

#endif
