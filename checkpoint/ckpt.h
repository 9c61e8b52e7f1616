/* SPDX-License-Identifier: MIT */
/*
 * A checkpoint's plugin images, loaded and judged once, by one set of rules
 * for the restore master and for the tool (`check`, `inspect`): what one of
 * them refuses, the others refuse, with the same line.
 *
 *   ckpt_load()            the directory is complete (ckpt_complete.h); every
 *                          process, render-file, dma-buf and libhsakmt image
 *                          loads and validates (kfd_image.h: a libhsakmt image
 *                          names libhsakmt's two files only, each once)
 *   ckpt_source_build()    the checkpointed GPUs as one matcher source: the
 *                          union of every image's GPUs in one topology merged
 *                          from their recorded nodes; images that disagree
 *                          about a node or a GPU are refused
 *   ckpt_check_contents()  every GPU's BO contents files are there, their
 *                          indexes intact and their parent chains whole
 *                          (bo_stream_check_files())
 *
 * Each returns 0, or -errno with one line in err naming the file; nothing is
 * printed. The directory fd is the caller's (borrowed); what a struct holds
 * is freed by its _free(), also after a failure. Single-threaded.
 */
#ifndef AMDGPU_CRIU_CHECKPOINT_CKPT_H
#define AMDGPU_CRIU_CHECKPOINT_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "images/kfd_image.h"
#include "topology/topology.h"

struct ckpt {
	const char *dir;		 /* its name, for the caller's messages (may be NULL) */
	int dir_fd;			 /* borrowed */
	struct kfd_process_image *procs; /* ascending ids */
	size_t n_procs;
	struct render_file_image *renders; /* ascending ids */
	size_t n_renders;
	struct dmabuf_file_image *dmabufs; /* the application's dma-buf fds of KFD BOs */
	size_t n_dmabufs;
	/* amdgpu-hsakmt-<pid>.img: libhsakmt's files per process (plugin/hsakmt_files.h) */
	HsakmtFilesEntry **hsakmt; /* ascending pids */
	uint32_t *hsakmt_pids;
	size_t n_hsakmt;
};

/* A checkpoint with GPU files: a process or render-file image. */
static inline bool ckpt_has_gpus(const struct ckpt *ck)
{
	return ck->n_procs || ck->n_renders;
}

/* A directory without any image of ours loads as an empty checkpoint. */
int ckpt_load(int dir_fd, struct ckpt *ck, char *err, size_t errlen);
void ckpt_free(struct ckpt *ck);

struct ckpt_source {
	struct kfd_topology topo; /* the dump node's nodes from all images, merged */
	uint32_t *nodes;	  /* node indexes of every recorded GPU, ascending */
	size_t n_nodes;
};

int ckpt_source_build(const struct ckpt *ck, struct ckpt_source *src, char *err, size_t errlen);
void ckpt_source_free(struct ckpt_source *src);

int ckpt_check_contents(const struct ckpt *ck, char *err, size_t errlen);

#endif
