// SPDX-License-Identifier: MIT
/*
 * The plugin's options from a file (options_file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "common/escape.h"
#include "common/regfile.h"
#include "plugin/options_file.h"

/* The plugin's own, then the matcher's checks (topology/checks.c), as the reference plugin names
 * them. */
const char *const OPTIONS_FILE_NAMES[] = {
	"AMDGPU_CRIU_COPY_ENGINE",
	"AMDGPU_CRIU_SDMA_TIMEOUT_MS",
	"AMDGPU_CRIU_PARALLEL_RESTORE",
	"AMDGPU_CRIU_SHARED_BO",
	"AMDGPU_CRIU_GEM_PROBE",
	"AMDGPU_CRIU_GEM_CENSUS",
	"AMDGPU_CRIU_DEBUGFS",
	"AMDGPU_CRIU_DIRECT_IO",
	"AMDGPU_CRIU_GPUS",
	"AMDGPU_CRIU_DEV_NODES",
	"KFD_CAPABILITY_CHECK",
	"KFD_VRAM_SIZE_CHECK",
	"KFD_NUM_GWS_CHECK",
	"KFD_CACHES_COUNT_CHECK",
	"KFD_FW_VER_CHECK",
	"KFD_SDMA_FW_VER_CHECK",
	"KFD_NUMA_CHECK",
	NULL,
};

/* What a message shows of a path: escaped, its first 255 bytes or so. */
#define SHOWN_PATH ESCAPE_LEN(255)

static bool known_name(const char *name)
{
	size_t i;

	for (i = 0; OPTIONS_FILE_NAMES[i]; i++)
		if (!strcmp(name, OPTIONS_FILE_NAMES[i]))
			return true;
	return false;
}

static char *trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		*--end = '\0';
	return s;
}

/* What a message shows of the file's bytes: escaped, the first 40 or so. */
#define SHOWN_TEXT 48

/*
 * One line (NUL-terminated, no newline): skipped, applied, or refused. name
 * is the file's, escaped.
 */
static int apply_line(char *line, const char *name, unsigned int lineno, unsigned int *applied,
		      char *err, size_t errlen)
{
	char *eq, *key, *value, shown[SHOWN_TEXT];

	line = trim(line);
	if (!*line || *line == '#')
		return 0;
	eq = strchr(line, '=');
	if (!eq)
		return errmsg_set(err, errlen, -EINVAL, "%s line %u: \"%s\" is no NAME=VALUE", name,
				  lineno, str_escape(line, shown, sizeof(shown)));
	*eq = '\0';
	key = trim(line);
	value = trim(eq + 1);
	if (!known_name(key))
		return errmsg_set(err, errlen, -EINVAL,
				  "%s line %u: %s is no option of the plugin "
				  "(AMDGPU_CRIU_COPY_ENGINE, ..., README: \"Options\")",
				  name, lineno, str_escape(key, shown, sizeof(shown)));
	if (getenv(key)) /* the environment wins */
		return 0;
	if (setenv(key, value, 0))
		return -errno;
	(*applied)++;
	return 0;
}

int options_text_apply(const char *text, const char *name, unsigned int *applied, char *err,
		       size_t errlen)
{
	char *copy = strdup(text), *line, *next, shown[SHOWN_PATH];
	unsigned int lineno = 0;
	int ret = 0;

	*applied = 0;
	if (!copy)
		return -ENOMEM;
	str_escape(name, shown, sizeof(shown));
	for (line = copy; !ret && line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		ret = apply_line(line, shown, ++lineno, applied, err, errlen);
	}
	free(copy);
	return ret;
}

/* The whole file, NUL-terminated, at most OPTIONS_FILE_MAX bytes. */
static int read_file(const char *path, char **text, char *err, size_t errlen)
{
	char why[160], *buf = NULL, shown[SHOWN_PATH];
	ssize_t n;
	size_t len = 0;
	int fd = regfile_open(AT_FDCWD, path, why, sizeof(why)), ret = 0;

	str_escape(path, shown, sizeof(shown));
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", shown, why);
		return fd;
	}
	buf = malloc(OPTIONS_FILE_MAX + 2);
	while (buf && (n = read(fd, buf + len, OPTIONS_FILE_MAX + 1 - len)) > 0)
		len += (size_t)n;
	if (!buf)
		ret = -ENOMEM;
	else if (n < 0)
		ret = -errno;
	else if (len > OPTIONS_FILE_MAX)
		ret = -EFBIG;
	close(fd);
	if (ret) {
		snprintf(err, errlen, "%s: %s", shown,
			 ret == -EFBIG ? "larger than 64 KiB: not an options file"
				       : strerror(-ret));
		free(buf);
		return ret;
	}
	buf[len] = '\0';
	if (memchr(buf, '\0', len)) {
		snprintf(err, errlen, "%s: a NUL byte: not an options file", shown);
		free(buf);
		return -EINVAL;
	}
	*text = buf;
	return 0;
}

int options_file_apply(char *path, size_t pathlen, unsigned int *applied, char *err, size_t errlen)
{
	const char *named = getenv(OPTIONS_FILE_ENV);
	char *text = NULL, shown[SHOWN_PATH];
	size_t len;
	int ret;

	*applied = 0;
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
				  "%s names a path of %zu bytes, more than the %zu taken: %s",
				  OPTIONS_FILE_ENV, len,
				  (pathlen < PATH_MAX ? pathlen : (size_t)PATH_MAX) - 1,
				  str_escape(named, shown, sizeof(shown)));
	memcpy(path, named, len + 1);
	ret = read_file(path, &text, err, errlen);
	if (!ret)
		ret = options_text_apply(text, path, applied, err, errlen);
	free(text);
	return ret;
}
