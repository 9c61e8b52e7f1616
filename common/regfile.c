// SPDX-License-Identifier: MIT
/*
 * regfile_open(): a regular file or a clear refusal, never a blocked open
 * (see regfile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "common/regfile.h"

static const char *file_type(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFIFO:
		return "a FIFO";
	case S_IFSOCK:
		return "a socket";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	case S_IFDIR:
		return "a directory";
	default:
		return "a special file";
	}
}

/* The refusal for a file that exists but is not a regular one. */
static int refuse(mode_t mode, char *why, size_t whylen)
{
	if (S_ISLNK(mode))
		return errmsg_set(why, whylen, -ELOOP,
				  "a symbolic link; symbolic links are refused (put the file "
				  "itself there)");
	return errmsg_set(why, whylen, S_ISDIR(mode) ? -EISDIR : -EINVAL,
			  "%s, not a regular file; refused", file_type(mode));
}

int regfile_open(int dir_fd, const char *name, char *why, size_t whylen)
{
	struct stat st;
	int fd, flags;

	/* Looked at first: a device node is never opened, not even without blocking. */
	if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW))
		return errmsg_set(why, whylen, -errno, "%s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return refuse(st.st_mode, why, whylen);
	/* The name may have been replaced since: O_NONBLOCK and O_NOFOLLOW cover that. */
	fd = openat(dir_fd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP)
			return refuse(S_IFLNK, why, whylen);
		return errmsg_set(why, whylen, -errno, "%s", strerror(errno));
	}
	if (fstat(fd, &st)) {
		flags = errmsg_set(why, whylen, -errno, "%s", strerror(errno));
		close(fd);
		return flags;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return refuse(st.st_mode, why, whylen);
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)) {
		close(fd);
		return errmsg_set(why, whylen, -errno, "%s", strerror(errno));
	}
	return fd;
}
