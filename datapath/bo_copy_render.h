/* SPDX-License-Identifier: MIT */
/*
 * Render-node copy engine: writes restored BO contents through a CPU mapping
 * of the BO on the render-node file that owns the process's GPU VM (the
 * drm_fd given to RESTORE), at the BO's restored mmap offset.
 *
 * Why not the dma-buf: in 6.12 a restored non-WRITABLE BO's dma-buf is
 * read-only (docs/kfd-facts.md 4.6), while its render-node mapping is granted to
 * the VM's DRM file whatever the BO's GPU permissions. A render-node mapping
 * must start at the BO's offset exactly (no window inside a BO), so each BO
 * is mapped whole while it is written: address space, not memory, since the
 * pages are the BO's own.
 *
 * The engine is given, per GPU, the table of its BOs keyed by the dma-buf fd
 * that bo_stream passes to open_bo (the fd itself is only a key here).
 */
#ifndef AMDGPU_CRIU_BO_COPY_RENDER_H
#define AMDGPU_CRIU_BO_COPY_RENDER_H

#include <stdint.h>

#include "datapath/bo_stream_types.h"

struct bo_render_map {
	int dmabuf_fd;	 /* key: the BO's dma-buf fd from RESTORE */
	int drm_fd;	 /* the VM-owning render-node file */
	uint64_t offset; /* restored_offset */
};

struct bo_render_engine {
	struct bo_copy_engine engine; /* pass &engine in bo_stream_gpu */
	struct bo_render_map *maps;   /* sorted by dmabuf_fd by bo_render_engine_init() */
	uint32_t n_maps;
};

/* Takes ownership of maps (malloc'ed); sorts it. */
void bo_render_engine_init(struct bo_render_engine *e, struct bo_render_map *maps, uint32_t n);
void bo_render_engine_fini(struct bo_render_engine *e);

#endif
