/* SPDX-License-Identifier: MIT */
/*
 * gemlib: render-node (GEM) BOs made the way Mesa and other libdrm_amdgpu
 * users make them (amdgpu_bo_alloc, amdgpu_bo_cpu_map, amdgpu_bo_va_op),
 * for workloads that hold GPU memory KFD does not know. Kept apart from
 * kfdlib: libdrm's drm.h and the kernel's uapi drm.h cannot share a file.
 * Functions return 0 or a negative errno.
 */
#ifndef GEMLIB_H
#define GEMLIB_H

#include <stdbool.h>
#include <stdint.h>

struct gem_dev;
struct gem_bo;

/* libdrm_amdgpu on an open render-node fd (it works on a dup of the same open file). */
int gem_dev_open(int render_fd, struct gem_dev **out);
void gem_dev_close(struct gem_dev *d);
/* A BO of size bytes in VRAM (else GTT), CPU-mapped; with gpu_map also mapped in the GPU VM. */
int gem_bo_new(struct gem_dev *d, uint64_t size, bool vram, bool gpu_map, struct gem_bo **out);
void gem_bo_free(struct gem_bo *bo);
uint8_t *gem_bo_cpu(struct gem_bo *bo);
uint32_t gem_bo_handle(struct gem_bo *bo);

/*
 * A CPU mapping of a dma-buf of this render node's GPU through the render
 * node, as KFD BOs are mapped: PRIME import (a GEM handle), its mmap offset
 * (AMDGPU_GEM_MMAP), mmap, and the handle closed again, so that the file
 * keeps no GEM handle (the mapping keeps the object). The render file must
 * be allowed the object's offset, as a KFD import of it on that file is.
 */
int gem_map_dmabuf(int render_fd, int dmabuf_fd, uint64_t size, uint8_t **cpu);

/* A PRIME import of a dma-buf as a GEM handle of the file, kept (drmPrimeFDToHandle). */
int gem_import_handle(int render_fd, int dmabuf_fd, uint32_t *handle);
/* Unmaps the BO's GPU VA mapping (gem_bo_new's gpu_map). */
int gem_bo_unmap_va(struct gem_bo *bo);
/* A dma-buf fd of the BO. */
int gem_bo_export(struct gem_bo *bo, int *dmabuf_fd);

/* GEM_OP GET_GEM_CREATE_INFO: the size of the BO behind a handle of the file. */
int gem_handle_size(int render_fd, uint32_t handle, uint64_t *size);

/* The one GPU VA mapping of a handle (Linux 6.18's GET_MAPPING_INFO): -EINVAL before 6.18. */
struct gem_mapping {
	uint64_t addr, size, offset, flags;
};
int gem_handle_mapping(int render_fd, uint32_t handle, struct gem_mapping *m);

#endif
