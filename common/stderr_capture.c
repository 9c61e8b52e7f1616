// SPDX-License-Identifier: MIT
/* Keeping a library's messages off fd 2 (see stderr_capture.h). */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/stderr_capture.h"

int stderr_capture_begin(struct stderr_capture *c)
{
	int ret;

	c->memfd = memfd_create("stderr-capture", MFD_CLOEXEC);
	if (c->memfd < 0)
		return -errno;
	c->saved_flags = fcntl(STDERR_FILENO, F_GETFD);
	c->saved_fd = -1;
	if (c->saved_flags >= 0) {
		c->saved_fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
		if (c->saved_fd < 0)
			goto fail;
	}
	if (dup2(c->memfd, STDERR_FILENO) < 0)
		goto fail;
	return 0;
fail:
	ret = -errno;
	if (c->saved_fd >= 0)
		close(c->saved_fd);
	close(c->memfd);
	return ret;
}

/* The captured bytes as one line: newlines become "; ", the last one goes. */
static void read_captured(int fd, char *buf, size_t len)
{
	char raw[512];
	ssize_t n = pread(fd, raw, sizeof(raw), 0);
	size_t i, o = 0;

	if (!len)
		return;
	for (i = 0; n > 0 && i < (size_t)n && o + 3 < len; i++) {
		if (raw[i] != '\n')
			buf[o++] = raw[i] ? raw[i] : ' ';
		else if (i + 1 < (size_t)n) {
			buf[o++] = ';';
			buf[o++] = ' ';
		}
	}
	buf[o] = 0;
}

void stderr_capture_end(struct stderr_capture *c, char *buf, size_t len)
{
	if (c->saved_fd >= 0) {
		dup3(c->saved_fd, STDERR_FILENO, c->saved_flags & FD_CLOEXEC ? O_CLOEXEC : 0);
		close(c->saved_fd);
	} else {
		close(STDERR_FILENO);
	}
	read_captured(c->memfd, buf, len);
	close(c->memfd);
}
