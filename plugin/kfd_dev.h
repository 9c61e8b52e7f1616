/* SPDX-License-Identifier: MIT */
/*
 * The plugin's own /dev/kfd handle (GET_VERSION before a dump, RESUME after a
 * restore): opened on first use, O_CLOEXEC, shared by reference count between
 * threads, closed when the last user puts it. Opening lazily in the CRIU
 * master, after the restored tasks were forked, keeps it out of them.
 */
#ifndef AMDGPU_CRIU_KFD_DEV_H
#define AMDGPU_CRIU_KFD_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define KFD_DEVICE_PATH	   "/dev/kfd"
#define KFD_SYSFS_TOPOLOGY "/sys/class/kfd/kfd/topology"
#define DRM_MAJOR	   226 /* DRM's character devices; render minors from 128 */
#define DRM_RENDER_BASE	   128

/* fd >= 0 (a reference), or -errno. Every success needs a kfd_dev_put(). */
int kfd_dev_get(void);
void kfd_dev_put(void);

/* The device number of /dev/kfd on this machine; -ENOENT without one. */
int kfd_dev_rdev(dev_t *rdev);

/* Is the character device `rdev` a DRM render node (major 226, minor >= 128)? */
bool kfd_is_render_rdev(dev_t rdev);

/* Checks that this KFD supports CRIU (KFD_CRIU_MIN_*); one line in err if not. */
int kfd_dev_check_version(uint32_t *major, uint32_t *minor, char *err, size_t errlen);

#endif
