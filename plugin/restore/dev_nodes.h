/* SPDX-License-Identifier: MIT */
/*
 * Device nodes in a restored task's /dev.
 *
 * A container's /dev is a tmpfs that CRIU brings back from the checkpoint's
 * tar, so it holds the checkpoint's nodes: the render nodes of the GPUs the
 * container had then, not of those the runtime gave it now (runc and crun
 * do not create them on restore: criu #2872, #2888), and a /dev/kfd with the
 * checkpoint host's KFD major, which is dynamic. The restored task (which
 * still has CRIU's credentials) makes the nodes it needs right, as the
 * runtime would have at the container's start, and says so in one line;
 * the device cgroup still decides whether it may:
 *   - the render node of each GPU it restores onto, when missing, is created
 *     as 226:<minor> with the mode and owner of a render node already there
 *     (0666 root if none); a node of that name that is another device is
 *     left alone (the restore is refused: render_fds.h);
 *   - /dev/kfd, when it is not this host's KFD (sysfs kfd/dev), is replaced
 *     (same mode and owner) by an atomic rename, never opened first: the
 *     old numbers may be another driver's device.
 * AMDGPU_CRIU_DEV_NODES (options.h, given as `create`): "create" (the
 * default) or "keep" (touch nothing: such a restore is refused).
 */
#ifndef AMDGPU_CRIU_DEV_NODES_H
#define AMDGPU_CRIU_DEV_NODES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define DEV_NODES_ENV "AMDGPU_CRIU_DEV_NODES"
#define KFD_SYSFS_DEV "/sys/class/kfd/kfd/dev" /* "MAJOR:MINOR" of this host's KFD */

/*
 * open("/dev/dri/renderD<minor>", O_RDWR | O_CLOEXEC): fd or -errno;
 * -ENXIO when the node of that name is not character device 226:<minor>
 * (a /dev restored from a checkpoint holds the checkpoint-time nodes: GPUs
 * are found through sysfs, their nodes checked by device number).
 */
int render_node_open(uint32_t minor);
/* The same in another directory (tests). */
int render_node_open_at(const char *dir, uint32_t minor);
/* What a render_node_open() error means for the user, ": ..." or "". */
const char *render_node_hint(int err);

/* render_node_open(), creating a missing node when create (the policy) says so. fd or -errno. */
int render_node_open_task(uint32_t minor, bool create);

/* Creates dir/renderD<minor> (dir too) as above: 0 or -errno (-EEXIST: there). */
int render_node_create_at(const char *dir, uint32_t minor);

/*
 * /dev/kfd opened O_RDWR in a restored task, replaced first when it is not
 * this host's KFD (KFD_SYSFS_DEV) and the policy allows; opened unchecked
 * where sysfs has no KFD (a fake one). fd or -errno (logged).
 */
int kfd_node_open_task(bool create);

/* The same for the node at path, which must be character device kfd_rdev. */
int kfd_node_open_at(const char *path, dev_t kfd_rdev, bool create);

/*
 * Only the check and replacement, not the open (the first open of /dev/kfd
 * makes the KFD process: kfd_confine.h opens it elsewhere). 0 or -errno.
 */
int kfd_node_prepare_task(bool create);
int kfd_node_prepare_at(const char *path, dev_t kfd_rdev, bool create);

#endif
