/* SPDX-License-Identifier: MIT */
/*
 * The plugin's metadata images under `criu --stream`: a private staging
 * directory in memory (tmpfs, /dev/shm), so that the modules that write and
 * read images in a directory work unchanged, and nothing reaches the disk.
 * (BO contents never go through it: datapath/bo_stream.h streams them.)
 *
 * Dump: the hooks write images into the stage as into CRIU's directory;
 * after each hook that wrote some, stream_stage_flush() sends every
 * complete image (not a .part) through the stream, whole, removes it from
 * the stage, and then sends a manifest of them, amdgpu-manifest-<n>.img
 * (n = 0, 1, ...: one per flush; one image name a line).
 * Restore: stream_stage_fetch() asks the stream for amdgpu-manifest-0.img,
 * -1, ... until one is missing, and for every image each names, each read
 * whole before the next is asked for (criu-image-streamer serves one image
 * at a time, each once), into the stage, which the restore then reads as
 * an image directory.
 *
 * Errors: negative errno, one line in err naming the image.
 */
#ifndef AMDGPU_CRIU_PLUGIN_STREAM_STAGE_H
#define AMDGPU_CRIU_PLUGIN_STREAM_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include "datapath/bo_stream_types.h"

#define STREAM_STAGE_MANIFEST  "amdgpu-manifest-%u.img"
#define STREAM_STAGE_MAX_IMAGE (64u << 20) /* bytes of one metadata image */
#define STREAM_STAGE_MAX_NAMES 65536u	   /* images of one manifest */

struct stream_stage {
	int dir_fd; /* -1: none */
	char path[256];
	uint32_t manifests; /* sent (dump) or fetched (restore) so far */
	bo_stream_open_fn open;
	void *open_arg;
};

/* A new private directory (0700) under parent (NULL: /dev/shm, else /run: tmpfs). */
int stream_stage_open(struct stream_stage *st, const char *parent, bo_stream_open_fn open,
		      void *open_arg, char *err, size_t errlen);
/* Removes the stage and what it holds. */
void stream_stage_close(struct stream_stage *st);

/* Dump: every complete image of the stage into the stream, then its manifest. */
int stream_stage_flush(struct stream_stage *st, char *err, size_t errlen);

/* Restore: every image the stream's manifests name, into the stage; *count of them. */
int stream_stage_fetch(struct stream_stage *st, uint32_t *count, char *err, size_t errlen);

#endif
