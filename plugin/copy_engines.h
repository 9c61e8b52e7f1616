/* SPDX-License-Identifier: MIT */
/*
 * Which engine moves each GPU's BO contents, for one dump or restore of a
 * process: SDMA (datapath/bo_copy_sdma.h) where the GPU's render node takes
 * it, else the CPU (the dma-buf mmap engine on dump, the render-node mmap
 * engine on restore).
 *
 * AMDGPU_CRIU_COPY_ENGINE (options.h: copy_engine_opts) chooses:
 *   auto (default)  SDMA; a GPU whose SDMA engine cannot be set up (no SDMA
 *                   ring, a render node that refuses libdrm_amdgpu, a GPU
 *                   older than gfx9) is copied by the CPU, with a warning
 *                   naming the GPU and the reason
 *   sdma            SDMA only: a GPU without it fails the dump or restore
 *   cpu             the CPU only
 * Only the set-up falls back: once SDMA has started moving a GPU's data,
 * an SDMA error fails the operation (the dump leaves the process running,
 * the restore leaves nothing behind), never a silent switch.
 * AMDGPU_CRIU_SDMA_TIMEOUT_MS (default 60000) bounds each fence wait: a hung
 * engine is an error naming the GPU, the BO and the offset.
 */
#ifndef AMDGPU_CRIU_PLUGIN_COPY_ENGINES_H
#define AMDGPU_CRIU_PLUGIN_COPY_ENGINES_H

#include <stdbool.h>
#include <stdint.h>

#include "datapath/bo_copy_sdma.h"
#include "options/options.h"

struct copy_gpu {
	uint32_t gpu_id;	     /* for messages (the checkpointed id) */
	uint32_t render_minor;	     /* where the data is now */
	uint32_t gfx_target_version; /* from the KFD topology */
	bool small_bar;		     /* VRAM heap FB_PRIVATE: not all VRAM is CPU-visible */
	uint32_t invisible_bos;	     /* its VRAM BOs without PUBLIC: maybe not CPU-visible */
};

/*
 * A GPU's copy_gpu from its KFD node (gfx target version, small BAR when its
 * VRAM heap is FB_PRIVATE); invisible_bos left 0 for the caller to count.
 */
struct kfd_node;
struct copy_gpu copy_gpu_of_node(const struct kfd_node *node, uint32_t gpu_id,
				 uint32_t render_minor);

/*
 * Per GPU, sdma[i] gets the GPU's SDMA engine, or NULL where the CPU copies
 * (mode cpu, or auto and SDMA could not be set up: logged); streams[i].engine
 * (streams may be NULL) is set to it where there is one, left as it was
 * (the caller's CPU engine) elsewhere. Fails (logged,
 * every engine opened so far closed) in mode sdma when a GPU has no SDMA,
 * and in any mode with -EOPNOTSUPP when the CPU would have to copy VRAM
 * BOs of a small-BAR GPU that were not allocated CPU-visible (no PUBLIC
 * flag): a CPU access to them makes the kernel move them into the visible
 * window or to GTT (changing where the application's memory lives, and
 * SIGBUS for a pinned one; docs/sdma-facts.md 5.2), so only SDMA may
 * copy them.
 */
int copy_engines_open(const struct copy_engine_opts *opts, const struct copy_gpu *gpus, uint32_t n,
		      struct bo_sdma_engine **sdma, struct bo_stream_gpu *streams);

/* How a dump writes BO contents, as AMDGPU_CRIU_DIRECT_IO says. */
enum bo_write_mode copy_write_mode(enum direct_io_mode mode);

/*
 * Closes the engines. With `what` (e.g. "dump of pid 42:"), first logs per
 * GPU which engine moved how many bytes, at what rate, and how much of the
 * copy and the file I/O overlapped (streams[i].times; streams may be NULL).
 */
void copy_engines_close(const char *what, const struct copy_gpu *gpus, uint32_t n,
			struct bo_sdma_engine **sdma, const struct bo_stream_gpu *streams);

/*
 * A dump's BO contents of n GPUs, the one runner of the dump's /dev/kfd and
 * render files: engines opened as above, bo_stream_dump(cfg), engines
 * closed, their figures logged under `what`. 0 or -errno with one line in
 * err (a failed open has logged its own).
 */
struct bo_stream_config;
int copy_engines_dump(const struct copy_engine_opts *opts, const struct bo_stream_config *cfg,
		      const struct copy_gpu *gpus, uint32_t n, struct bo_stream_gpu *streams,
		      const char *what, char *err, size_t errlen);

#endif
