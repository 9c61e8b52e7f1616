/* SPDX-License-Identifier: MIT */
/*
 * A synthetic checkpoint, as the plugin's dump would leave it in a CRIU image
 * directory: one process image (amdgpu-kfd-<id>.img) for GPUs of a real
 * topology, a private blob in the kernel's layout, BOs of every type, their
 * contents streamed with bo_stream_dump() from memfds, and one render-node
 * image per GPU. Shared by the unit tests and tests/host/mkimage.c, so it
 * does not use cmocka: errors are a negative errno and one line in err.
 *
 * Per GPU i (in the order of `nodes`), BOs in this order:
 *   VRAM 64 KiB + 4 KiB * i, VRAM 40 KiB, GTT 8 KiB (contents, 16 KiB chunks),
 *   USERPTR 16 KiB, DOORBELL 8 KiB, MMIO_REMAP 4 KiB (no contents).
 * Objects: one compute queue per GPU, one SDMA queue on the first GPU, two
 * events, one SVM range.
 */
#ifndef AMDGPU_CRIU_TESTS_SYNTH_CKPT_H
#define AMDGPU_CRIU_TESTS_SYNTH_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "amdgpu_plugin.pb-c.h"
#include "topology/topology.h"

#define SYNTH_BOS_PER_GPU     6u
#define SYNTH_CONTENT_PER_GPU 3u
#define SYNTH_CHUNK	      (16u << 10)
#define SYNTH_MAX_GPUS	      16u

struct synth_spec {
	const struct kfd_topology *topo; /* the dump node; GPUs need a gpu_id */
	const uint32_t *nodes;		 /* node indexes of the process's GPUs */
	size_t n_nodes;
	uint32_t image_id;	    /* CRIU file id of the /dev/kfd file */
	uint32_t render_id;	    /* render images get ids render_id + i; 0: none */
	const char *release;	    /* NULL: "6.12.48+deb13-amd64" */
	uint32_t bo_record_size;    /* 0: the release's */
	uint32_t user_gpu_id_delta; /* user gpu_id = actual + delta (a restored process) */
	uint32_t pid;		    /* 0: 4242 */
	bool xnack;
};

/* The process image in memory, before it is packed; tests may change it. */
struct synth_process {
	KfdProcessEntry entry;
	KfdDeviceEntry devs[SYNTH_MAX_GPUS];
	KfdDeviceEntry *dev_ptrs[SYNTH_MAX_GPUS];
	KfdBoEntry bos[SYNTH_MAX_GPUS * SYNTH_BOS_PER_GPU];
	KfdBoEntry *bo_ptrs[SYNTH_MAX_GPUS * SYNTH_BOS_PER_GPU];
	char release[64];
	uint8_t *blob;
	KfdTopologyEntry *topo;
};

/* Size of BO `bo` (0..SYNTH_BOS_PER_GPU-1) of the GPU at position gpu. */
uint64_t synth_bo_size(size_t gpu, size_t bo);

int synth_process_build(const struct synth_spec *spec, struct synth_process *p, char *err,
			size_t errlen);
void synth_process_free(struct synth_process *p);

/* Contents of the VRAM/GTT BOs of every GPU (amdgpu-bo-<id>-<user gpu_id>.*). */
int synth_write_contents(int dir_fd, const struct synth_spec *spec, const struct synth_process *p,
			 char *err, size_t errlen);

/* amdgpu-render-<id>.img for GPU node `node`. */
int synth_write_render(int dir_fd, const struct kfd_topology *topo, uint32_t node, uint32_t id,
		       char *err, size_t errlen);
/* The same with n_gem (at most 4) GEM BOs of 64 KiB, handles 1, 3, ..., each mapped once (no
 * contents). */
int synth_write_render_gem(int dir_fd, const struct kfd_topology *topo, uint32_t node, uint32_t id,
			   uint32_t n_gem, char *err, size_t errlen);

/* Everything: process image, contents, render images. */
int synth_write_checkpoint(int dir_fd, const struct synth_spec *spec, char *err, size_t errlen);

#endif
