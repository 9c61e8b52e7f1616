/* SPDX-License-Identifier: MIT */
/*
 * Keeping a library's messages off fd 2. libdrm prints to stderr (e.g.
 * "/usr/share/libdrm/amdgpu.ids: No such file or directory" from
 * amdgpu_device_initialize). In a task CRIU is restoring, fd 2 may already
 * be the application's own stderr file: a message there changes the
 * application's file (CRIU then refuses the restore: "has bad size"). So
 * library calls that may print run between begin and end: fd 2 points at a
 * memfd meanwhile, and end puts fd 2 back exactly as it was (open or not,
 * close-on-exec or not) and hands over what was written, for our own log.
 * Process-wide: anything another thread writes to fd 2 meanwhile is captured
 * too (and so reaches the log rather than being lost).
 */
#ifndef AMDGPU_CRIU_STDERR_CAPTURE_H
#define AMDGPU_CRIU_STDERR_CAPTURE_H

#include <stddef.h>

struct stderr_capture {
	int saved_fd;	 /* a duplicate of the old fd 2; -1 if fd 2 was not open */
	int saved_flags; /* its FD_CLOEXEC */
	int memfd;
};

/* 0, or a negative errno with fd 2 untouched. */
int stderr_capture_begin(struct stderr_capture *c);

/*
 * Restores fd 2; what was written (at most len - 1 bytes, lines joined with
 * "; ", no trailing newline) goes to buf ("" if nothing).
 */
void stderr_capture_end(struct stderr_capture *c, char *buf, size_t len);

#endif
