/* SPDX-License-Identifier: MIT */
/*
 * The GEM handles of a render-node file, for the dump's audit and GEM dump
 * and the restore's GEM restore: the ioctl they go through and Linux 6.18's
 * listing. No state; any thread.
 */
#ifndef AMDGPU_CRIU_PLUGIN_GEM_LIST_H
#define AMDGPU_CRIU_PLUGIN_GEM_LIST_H

#include <stdint.h>

/* An ioctl on a render fd: 0 or -errno (drmIoctl() in the plugin; a model in tests). */
typedef int (*render_ioctl_fn)(int fd, unsigned long request, void *arg);

/*
 * Linux 6.18's GEM_LIST_HANDLES of one file (drm_uapi_618.h): the entries
 * (malloc'ed, ascending handles) and their number. -EOPNOTSUPP where the
 * kernel has no such ioctl.
 */
struct drm_amdgpu_gem_list_handles_entry;
int gem_handles_list(int fd, render_ioctl_fn ioctl_fn,
		     struct drm_amdgpu_gem_list_handles_entry **entries, uint32_t *n);

/* drmIoctl(): 0 or -errno (the plugin's render_ioctl_fn). */
int render_drm_ioctl(int fd, unsigned long request, void *arg);

#endif
