/* SPDX-License-Identifier: MIT */
/*
 * Opening a file that came from somewhere we do not trust (a CRIU image
 * directory, a sysfs tree or a copy of one) for reading.
 *
 * Every reader of such files goes through regfile_open(): a FIFO in place
 * of an image would block open() and read() for ever, a device node could
 * do anything on open, and a symbolic link could point anywhere. So the
 * file is looked at first without following links (fstatat), then opened
 * O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC (nothing can block, even
 * if the name was swapped for a FIFO in between) and checked again with
 * fstat; O_NONBLOCK is cleared afterwards, so reads have regular-file
 * semantics.
 */
#ifndef AMDGPU_CRIU_REGFILE_H
#define AMDGPU_CRIU_REGFILE_H

#include <stddef.h>

/*
 * Opens dir_fd/name read-only if it is a regular file. Returns the fd, or a
 * negative errno with a short phrase in why (to follow "<file>: " in the
 * caller's one-line message; why may be NULL):
 *   -ELOOP   name is a symbolic link ("a symbolic link; symbolic links are refused ...")
 *   -EISDIR  name is a directory ("a directory, not a regular file; refused")
 *   -EINVAL  name is a FIFO, socket or device ("a FIFO, not a regular file; refused")
 *   other    the failed system call's errno (strerror text), e.g. -ENOENT, -EACCES
 */
int regfile_open(int dir_fd, const char *name, char *why, size_t whylen);

#endif
