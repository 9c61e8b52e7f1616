/* SPDX-License-Identifier: MIT */
/*
 * Reads and writes of exactly len bytes, positional or at the file's offset
 * (pipes, sockets); EINTR and short transfers retried.
 */
#ifndef AMDGPU_CRIU_FULLIO_H
#define AMDGPU_CRIU_FULLIO_H

#include <stddef.h>
#include <stdint.h>

/* 0, -errno, or -EIO when the write makes no progress. */
int pwrite_full(int fd, const void *buf, size_t len, uint64_t off);
/* 0, -errno, or -ENODATA when the file ends before len bytes. */
int pread_full(int fd, void *buf, size_t len, uint64_t off);
/* 0, -errno, or -EIO when the write makes no progress. */
int write_full(int fd, const void *buf, size_t len);
/* 0, -errno, or -ENODATA when the input ends before len bytes. */
int read_full(int fd, void *buf, size_t len);

#endif
