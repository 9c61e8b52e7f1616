/* SPDX-License-Identifier: MIT */
/* Positional reads and writes of exactly len bytes (EINTR and short transfers retried). */
#ifndef AMDGPU_CRIU_FULLIO_H
#define AMDGPU_CRIU_FULLIO_H

#include <stddef.h>
#include <stdint.h>

/* 0, -errno, or -EIO when the write makes no progress. */
int pwrite_full(int fd, const void *buf, size_t len, uint64_t off);
/* 0, -errno, or -ENODATA when the file ends before len bytes. */
int pread_full(int fd, void *buf, size_t len, uint64_t off);

#endif
