/* SPDX-License-Identifier: MIT */
/*
 * Threads the plugin starts in a CRIU process give up their share of its
 * root and working directory (unshare(CLONE_FS); both stay the same, only
 * no longer shared). The kernel lets a process setns() into a mount
 * namespace only while no other thread shares its fs_struct, and CRIU's
 * master does exactly that after a restore of a container's mount
 * namespace (it cleans up in the restored namespace) while the plugin's BO
 * copier threads still run: with the fs shared it failed with EINVAL and
 * the container's restore with it. The threads use directory fds only.
 */
#ifndef AMDGPU_CRIU_THREAD_FS_H
#define AMDGPU_CRIU_THREAD_FS_H

#include <errno.h>
#include <sched.h>

/* Call first in every thread the plugin creates; 0 or -errno (then shared, as before). */
static inline int thread_own_fs(void)
{
	return unshare(CLONE_FS) ? -errno : 0;
}

#endif
