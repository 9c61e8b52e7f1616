/* SPDX-License-Identifier: MIT */
/*
 * Is the plugin's part of an image directory complete, or was the dump that
 * wrote it cut short (CRIU killed, the machine lost)?
 *
 * The dump writes a process's files in an order that makes the answer
 * visible: first the BO contents (amdgpu-bo-<id>-<gpu>.img and .idx, synced),
 * then the process image amdgpu-kfd-<id>.img, written as <name>.part, synced
 * and renamed into place (a render-node file's GEM BOs likewise: contents,
 * then amdgpu-render-<id>.img). So a process image exists only once everything it
 * refers to is on disk, and a cut dump leaves BO contents files without
 * their process image, or a .part file. A failed (not killed) dump removes
 * what it wrote.
 */
#ifndef AMDGPU_CRIU_CKPT_COMPLETE_H
#define AMDGPU_CRIU_CKPT_COMPLETE_H

#include <stddef.h>

/*
 * 0 if complete; -ENODATA with one line in err ("incomplete checkpoint:
 * <file> ...", naming the first leftover and what is missing), or another
 * -errno when the directory cannot be read.
 */
int ckpt_check_complete(int dir_fd, char *err, size_t errlen);

#endif
