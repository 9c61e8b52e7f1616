// SPDX-License-Identifier: MIT
/*
 * The options file's text (options_file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "common/escape.h"
#include "common/regfile.h"
#include "options/options_file.h"

/* What a message shows of a path: escaped, its first 255 bytes or so. */
#define SHOWN_PATH ESCAPE_LEN(255)

/* The whole file, NUL-terminated, at most OPTIONS_FILE_MAX bytes. */
static int read_text(const char *path, char **text, char *err, size_t errlen)
{
	char why[160], *buf = NULL, shown[SHOWN_PATH];
	ssize_t n = 0;
	size_t len = 0;
	int fd = regfile_open(AT_FDCWD, path, why, sizeof(why)), ret = 0;

	str_escape(path, shown, sizeof(shown));
	if (fd < 0)
		return errmsg_set(err, errlen, fd, "options file %s: %s", shown, why);
	buf = malloc(OPTIONS_FILE_MAX + 2);
	while (buf && (n = read(fd, buf + len, OPTIONS_FILE_MAX + 1 - len)) > 0)
		len += (size_t)n;
	if (!buf)
		ret = -ENOMEM;
	else if (n < 0)
		ret = -errno;
	else if (len > OPTIONS_FILE_MAX)
		ret = -EFBIG;
	else if (memchr(buf, '\0', len))
		ret = -EINVAL;
	close(fd);
	if (ret) {
		free(buf);
		return errmsg_set(err, errlen, ret, "options file %s: %s", shown,
				  ret == -EFBIG	   ? "larger than 64 KiB: not an options file"
				  : ret == -EINVAL ? "a NUL byte: not an options file"
						   : strerror(-ret));
	}
	buf[len] = '\0';
	*text = buf;
	return 0;
}

int options_file_read(const char *named, char *path, size_t pathlen, char **text, char *err,
		      size_t errlen)
{
	char shown[SHOWN_PATH];
	size_t len;

	*text = NULL;
	if (pathlen)
		path[0] = '\0';
	if (!named || !*named) {
		if (access(OPTIONS_FILE_DEFAULT, F_OK) && errno == ENOENT)
			return 0;
		named = OPTIONS_FILE_DEFAULT;
	}
	/* cut short, it would name another file: refused whole */
	len = strlen(named);
	if (len >= pathlen || len >= PATH_MAX)
		return errmsg_set(err, errlen, -ENAMETOOLONG,
				  "options file: %s names a path of %zu bytes, more than the %zu "
				  "taken: %s",
				  OPTIONS_FILE_ENV, len,
				  (pathlen < PATH_MAX ? pathlen : (size_t)PATH_MAX) - 1,
				  str_escape(named, shown, sizeof(shown)));
	memcpy(path, named, len + 1);
	return read_text(path, text, err, errlen);
}
