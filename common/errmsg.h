/* SPDX-License-Identifier: MIT */
/*
 * The project's error convention: a function fails with a negative errno
 * and, when its caller passed a buffer, one line of text saying what went
 * wrong (no newline). Every module formats that line with errmsg_set().
 */
#ifndef AMDGPU_CRIU_ERRMSG_H
#define AMDGPU_CRIU_ERRMSG_H

#include <stddef.h>

/*
 * Formats the message into buf (truncated to len; nothing is written when
 * buf is NULL or len 0) and returns ret, so that
 * `return errmsg_set(err, errlen, -EINVAL, "...", ...);` reports and fails.
 */
__attribute__((format(printf, 4, 5))) int errmsg_set(char *buf, size_t len, int ret,
						     const char *fmt, ...);

#endif
