/* SPDX-License-Identifier: MIT */
/*
 * SDMA copy engine: BO contents moved by the GPU's own copy engine through
 * libdrm_amdgpu, instead of CPU reads of VRAM across the PCIe BAR (AMD
 * measured 16 GB in about 15 minutes with the CPU on a large-BAR machine,
 * about 10 seconds with SDMA: docs/sdma-facts.md 5.3), and
 * the only way to reach VRAM that the CPU cannot see (small BAR).
 *
 * One engine serves one GPU and is used by one thread at a time (bo_stream
 * runs one copying thread per GPU). It owns, for its whole life:
 *   - a DRM file of its own on the GPU's render node (amdgpu_device_initialize
 *     on /dev/dri/renderD<minor>, opened O_CLOEXEC), hence a GPU VM of its own:
 *     its mappings never collide with the checkpointed process's (the
 *     upstream plugin's render-node path copies inside the process's VM);
 *   - one context, made once (not one per chunk), submitting to DMA ring 0;
 *   - one IB buffer (GTT, CPU-mapped), rebuilt for every submission;
 *   - the staging buffers it was handed, registered as userptr BOs on first
 *     use and kept (at most BO_SDMA_MAX_STAGING; bo_stream's ring has a few).
 * Per BO (open_bo): the dma-buf is imported (PRIME), mapped into the VM
 * readable and writable, whatever the BO's own GPU permissions: a restored
 * BO that is not WRITABLE, whose dma-buf the CPU cannot map writable, is
 * written here all the same.
 *
 * Each read/write is COPY_LINEAR packets (sdma_ib.h: count = bytes - 1, 4 MiB
 * a packet) between the BO and the staging buffer, submitted and waited for
 * with a deadline; zero (restore of all-zero chunks) is CONST_FILL, with no
 * staging buffer at all. Host buffers must be page-aligned (bo_stream's ring
 * buffers are) and lie in one anonymous mapping (the kernel's ANONONLY rule).
 *
 * Errors are the kernel's, passed on as negative errno: ECANCELED (a GPU
 * reset or VRAM loss cancelled the job, or the context is guilty), ETIME (the
 * kernel's job timeout fired), EAGAIN (a userptr range was invalidated and
 * libdrm's retries ran out), ENOMEM; ETIMEDOUT when the fence did not signal
 * within the deadline (a hung engine); the engine's explain op words each
 * for a user (bo_stream puts it in its message). After any error the engine refuses
 * further work with the same error: bo_stream fails the GPU, and the caller
 * closes the engine, which releases everything (the DRM file last).
 */
#ifndef AMDGPU_CRIU_BO_COPY_SDMA_H
#define AMDGPU_CRIU_BO_COPY_SDMA_H

#include <stddef.h>
#include <stdint.h>

#include "datapath/bo_stream_types.h"

#define BO_SDMA_MAX_STAGING	   64u
#define BO_SDMA_DEFAULT_TIMEOUT_MS (60u * 1000u) /* the kernel's own SDMA job timeout is 10 s */

struct bo_sdma_config {
	uint32_t gpu_id;	     /* for messages */
	uint32_t render_minor;	     /* /dev/dri/renderD<render_minor> */
	uint32_t gfx_target_version; /* KFD topology: picks the packet format */
	uint32_t fence_timeout_ms;   /* 0: BO_SDMA_DEFAULT_TIMEOUT_MS */
	const char *dev_dir;	     /* NULL: "/dev/dri" (tests point elsewhere) */
};

struct bo_sdma_engine;

/*
 * Opens the engine of one GPU. -EOPNOTSUPP for a GPU whose SDMA packets are
 * not known (before gfx9), -ENODEV when the render node reports no SDMA
 * engine, else the error of the first failing step (open, device init,
 * context, IB buffer), with one line in err.
 */
int bo_sdma_engine_open(const struct bo_sdma_config *cfg, struct bo_sdma_engine **out, char *err,
			size_t errlen);

/* The engine to put in bo_stream_gpu.engine (valid until close). */
const struct bo_copy_engine *bo_sdma_engine_ops(struct bo_sdma_engine *e);

/* Bytes moved so far, and the time spent in submissions and fence waits. */
struct bo_sdma_stats {
	uint64_t bytes;
	uint64_t busy_ns;
	uint64_t submissions;
	uint64_t early_waits; /* fence waits the kernel ended before their time */
};
void bo_sdma_engine_stats(const struct bo_sdma_engine *e, struct bo_sdma_stats *stats);

/*
 * What libdrm printed while the engine was opened ("" if nothing), kept off
 * stderr (common/stderr_capture.h), for the caller's log.
 */
const char *bo_sdma_engine_libdrm_said(const struct bo_sdma_engine *e);

/* Releases everything; NULL is fine. */
void bo_sdma_engine_close(struct bo_sdma_engine *e);

#endif
