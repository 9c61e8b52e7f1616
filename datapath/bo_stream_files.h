/* SPDX-License-Identifier: MIT */
/*
 * The names of a GPU's BO contents files in an image directory:
 * amdgpu-bo-<image_id>-<gpu_id>.img (data) and .idx (index). No state.
 */
#ifndef AMDGPU_CRIU_DATAPATH_BO_STREAM_FILES_H
#define AMDGPU_CRIU_DATAPATH_BO_STREAM_FILES_H

#include <stddef.h>
#include <stdint.h>

/* The file name "amdgpu-bo-<image_id>-<gpu_id>.<ext>" (ext "img" or "idx") into buf. */
void bo_stream_file_name(char *buf, size_t len, uint32_t image_id, uint32_t gpu_id,
			 const char *ext);

/*
 * The reverse: 0 and *image_id if name is such a file (decimal numbers,
 * ".img" or ".idx"), -1 for any other name.
 */
int bo_stream_file_image_id(const char *name, uint32_t *image_id);

#endif
