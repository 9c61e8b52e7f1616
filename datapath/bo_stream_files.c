// SPDX-License-Identifier: MIT
/* The names of a GPU's BO contents files (bo_stream_files.h). */
#include "datapath/bo_stream_files.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BO_FILE_PREFIX "amdgpu-bo-"

void bo_stream_file_name(char *buf, size_t len, uint32_t image_id, uint32_t gpu_id, const char *ext)
{
	snprintf(buf, len, BO_FILE_PREFIX "%" PRIu32 "-%" PRIu32 ".%s", image_id, gpu_id, ext);
}

int bo_stream_file_image_id(const char *name, uint32_t *image_id)
{
	const char *p = name + strlen(BO_FILE_PREFIX);
	unsigned long v;
	char *end;

	if (strncmp(name, BO_FILE_PREFIX, strlen(BO_FILE_PREFIX)) || *p < '0' || *p > '9')
		return -1;
	errno = 0;
	v = strtoul(p, &end, 10);
	if (errno || v > UINT32_MAX || *end != '-' || end[1] < '0' || end[1] > '9')
		return -1;
	strtoul(end + 1, &end, 10);
	if (strcmp(end, ".img") && strcmp(end, ".idx"))
		return -1;
	*image_id = (uint32_t)v;
	return 0;
}
