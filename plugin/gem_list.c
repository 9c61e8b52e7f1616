// SPDX-License-Identifier: MIT
/* The GEM handles of a render-node file (gem_list.h). */
#include "plugin/gem_list.h"

#include <errno.h>
#include <stdlib.h>

#include <libdrm/amdgpu_drm.h>

#include "common/gpu_libs.h"
#include "plugin/drm_uapi_618.h"

int gem_handles_list(int fd, render_ioctl_fn ioctl_fn,
		     struct drm_amdgpu_gem_list_handles_entry **entries, uint32_t *n)
{
	struct drm_amdgpu_gem_list_handles args = {0};
	struct drm_amdgpu_gem_list_handles_entry *e = NULL;
	int tries, ret;

	*entries = NULL;
	*n = 0;
	ret = ioctl_fn(fd, DRM_IOCTL_AMDGPU_GEM_LIST_HANDLES, &args);
	if (ret)
		return ret == -EINVAL || ret == -ENOTTY ? -EOPNOTSUPP : ret;
	/* the count can grow between the calls only if the task runs: bounded retries */
	for (tries = 0; tries < 4 && args.num_entries; tries++) {
		uint32_t cap = args.num_entries;

		free(e);
		e = calloc(cap, sizeof(*e));
		if (!e)
			return -ENOMEM;
		args = (struct drm_amdgpu_gem_list_handles){.entries = (uintptr_t)e,
							    .num_entries = cap};
		ret = ioctl_fn(fd, DRM_IOCTL_AMDGPU_GEM_LIST_HANDLES, &args);
		if (ret)
			break;
		if (args.num_entries <= cap)
			break;
	}
	if (!ret && args.num_entries && tries == 4)
		ret = -EAGAIN;
	if (ret) {
		free(e);
		return ret;
	}
	*entries = e;
	*n = args.num_entries;
	return 0;
}

int render_drm_ioctl(int fd, unsigned long request, void *arg)
{
	int ret = gpu_libs_load(NULL, 0);

	if (ret)
		return ret;
	return gpu_libs()->drmIoctl(fd, request, arg) ? -errno : 0;
}
