// SPDX-License-Identifier: MIT
/* Pattern, READY and RESULT files of the small GPU workloads (zdtm_util.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zdtm_util.h"

uint8_t zdtm_pattern(uint64_t i, uint8_t seed)
{
	return (uint8_t)(i * 131 + (i >> 12) * 7 + seed);
}

void zdtm_fill(uint8_t *p, uint64_t n, uint8_t seed)
{
	for (uint64_t i = 0; i < n; i++)
		p[i] = zdtm_pattern(i, seed);
}

int64_t zdtm_verify(const uint8_t *p, uint64_t n, uint8_t seed)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i] != zdtm_pattern(i, seed))
			return (int64_t)i;
	return -1;
}

int zdtm_write_ready(const char *path, const char *head)
{
	char tmp[4096], link[300], target[256];
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *d;
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || !dir) {
		int ret = -errno;

		if (f)
			fclose(f);
		if (dir)
			closedir(dir);
		return ret;
	}
	fputs(head, f);
	while ((d = readdir(dir))) {
		ssize_t n;

		if (d->d_name[0] == '.' || atoi(d->d_name) == dirfd(dir) ||
		    atoi(d->d_name) == fileno(f))
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%s", d->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		fprintf(f, "fd %s %s\n", d->d_name, target);
	}
	closedir(dir);
	if (fclose(f))
		return -errno;
	return rename(tmp, path) ? -errno : 0;
}

int zdtm_result(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return 1;
	fprintf(f, "%s\n", text);
	fclose(f);
	return strcmp(text, "PASS") != 0;
}
