// SPDX-License-Identifier: MIT
/*
 * amdgpu's debugfs amdgpu_gem_info, read for one pid (gem_info.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/dump/gem_info.h"

/* "pid %8d command %s:" */
static bool file_header(const char *line, long *pid)
{
	char *end;

	if (strncmp(line, "pid ", 4))
		return false;
	errno = 0;
	*pid = strtol(line + 4, &end, 10);
	return !errno && end != line + 4 && !strncmp(end, " command ", 9);
}

/* "\t\t0x%08x: %12lld byte ..." */
static int handle_line(const char *line, uint64_t *bytes)
{
	unsigned long long size;
	unsigned int handle;
	int n = 0;

	if (sscanf(line, " 0x%x: %llu byte%n", &handle, &size, &n) != 2 || !n)
		return -EINVAL;
	*bytes = size;
	return 0;
}

int gem_info_count(FILE *f, gem_info_owner_fn owner, void *arg, struct gem_info_count *out)
{
	char *line = NULL;
	size_t cap = 0;
	bool mine = false, in_file = false;
	long pid;
	uint64_t bytes;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	while (!ret && getline(&line, &cap, f) > 0) {
		if (file_header(line, &pid)) {
			in_file = true;
			mine = owner(arg, pid);
			out->files += mine;
			continue;
		}
		if (line[0] == '\n')
			continue;
		/* a handle line before any file, or one that does not read: not amdgpu's format */
		ret = in_file ? handle_line(line, &bytes) : -EINVAL;
		if (!ret && mine) {
			out->handles++;
			out->bytes += bytes;
		}
	}
	if (!ret && ferror(f))
		ret = -EIO;
	free(line);
	return ret;
}

int gem_info_read(const char *debugfs, uint32_t minor, gem_info_owner_fn owner, void *arg,
		  struct gem_info_count *out)
{
	char path[4096];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "%s/dri/%u/amdgpu_gem_info", debugfs, minor);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	ret = gem_info_count(f, owner, arg, out);
	fclose(f);
	return ret;
}
