/* SPDX-License-Identifier: MIT */
/*
 * Where the restored task's GPU mappings go (UPDATE_VMA_MAP,
 * docs/kfd-facts.md 6.3): a BO mapped through a render node moves from its old
 * fake offset to `restored_offset` on the render file that owns the new VM; a
 * doorbell or MMIO mapping of /dev/kfd keeps its offset except for the
 * gpu_id field (bits 61..46), which becomes the new actual gpu_id.
 *
 * BO lookups are binary searches over (dump-node render minor, offset)
 * ranges, so tens of thousands of BOs cost microseconds per VMA. A VMA may
 * start inside a BO (a split mapping): its offset moves by the same delta.
 */
#ifndef AMDGPU_CRIU_VMA_MAP_H
#define AMDGPU_CRIU_VMA_MAP_H

#include <stddef.h>
#include <stdint.h>

struct vma_bo {
	uint32_t old_minor;  /* render minor of the BO's GPU on the dump node */
	uint64_t old_offset; /* bucket offset (GEM: the BO's GEM_MMAP offset) */
	uint64_t size;
	uint64_t new_offset; /* restored_offset */
	uint32_t device;     /* KFD BO: index of the BO's device in the process image */
	uint32_t dst_minor;  /* GEM BO of a render file: the local minor it lives on now */
};

struct vma_gpu {
	uint32_t old_actual_gpu_id;
	uint32_t new_actual_gpu_id;
};

/*
 * A doorbell or MMIO BO of /dev/kfd. KFD rewrites vm_pgoff of its mappings to
 * the offset's value part, so /proc/PID/maps (and CRIU's image) shows 0 and
 * the gpu_id is lost; what identifies the mapping is its address: the ROCm
 * thunk maps these BOs at their own GPU VA (CPU and GPU share the address).
 */
struct vma_kfd {
	uint64_t addr;	     /* the BO's VA = the mapping's start */
	uint64_t new_offset; /* restored_offset */
};

struct vma_map {
	struct vma_bo *bos;
	size_t n_bos;
	struct vma_gpu *gpus;
	size_t n_gpus;
	struct vma_kfd *kfd;
	size_t n_kfd;
};

/*
 * Takes ownership of the arrays (malloc'ed); sorts bos and kfd. -EINVAL on
 * overlapping BOs.
 */
int vma_map_init(struct vma_map *m, struct vma_bo *bos, size_t n_bos, struct vma_gpu *gpus,
		 size_t n_gpus, struct vma_kfd *kfd, size_t n_kfd);
void vma_map_free(struct vma_map *m);

/* Adds n BOs (copied) to the map. -EINVAL on overlapping BOs, -ENOMEM: the map unchanged. */
int vma_map_add_bos(struct vma_map *m, const struct vma_bo *bos, size_t n);

/* The BO whose [old_offset, old_offset + size) holds pgoff on old_minor, or NULL. */
const struct vma_bo *vma_map_find_bo(const struct vma_map *m, uint32_t old_minor, uint64_t pgoff);

/*
 * New /dev/kfd mmap offset of the mapping at addr with recorded offset
 * old_pgoff: the restored offset of the doorbell/MMIO BO at addr; else, if
 * old_pgoff still carries a gpu_id, the same offset with the new actual
 * gpu_id; else (offset 0, no BO there) the event page, which has no GPU.
 * -ENOENT when a gpu_id names no checkpointed GPU.
 */
int vma_map_kfd_offset(const struct vma_map *m, uint64_t addr, uint64_t old_pgoff,
		       uint64_t *new_pgoff);

#endif
