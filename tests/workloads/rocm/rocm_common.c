// SPDX-License-Identifier: MIT
#include "rocm_common.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void rc_fail(struct rc_result *r, const char *fmt, ...)
{
	va_list ap;

	if (!r->failures++) {
		va_start(ap, fmt);
		vsnprintf(r->first, sizeof(r->first), fmt, ap);
		va_end(ap);
	}
	va_start(ap, fmt);
	fputs("FAIL: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
	va_end(ap);
}

int rc_write_file(const char *path, const char *text)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fputs(text, f);
	if (fclose(f))
		return -errno;
	return rename(tmp, path) ? -errno : 0;
}

void rc_wait_file(const char *path)
{
	while (access(path, F_OK))
		usleep(50 * 1000);
}

void rc_append_fds(char *buf, size_t size)
{
	char link[300], target[256];
	struct dirent *de;
	size_t len;
	ssize_t n;
	DIR *d;

	d = opendir("/proc/self/fd");
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || atoi(de->d_name) == dirfd(d))
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		len = strlen(buf);
		snprintf(buf + len, size - len, "fd %s %s\n", de->d_name, target);
	}
	closedir(d);
}

static uint32_t word_at(uint32_t seed, uint64_t word)
{
	uint64_t x = (word + 1) * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)seed << 32 | seed);

	x ^= x >> 29;
	return (uint32_t)x | 1;
}

void rc_fill(void *p, size_t size, uint32_t seed)
{
	uint32_t *w = p;

	for (size_t i = 0; i < size / 4; i++)
		w[i] = word_at(seed, i);
}

size_t rc_check(const void *p, size_t size, uint32_t seed)
{
	const uint32_t *w = p;

	for (size_t i = 0; i < size / 4; i++)
		if (w[i] != word_at(seed, i))
			return i * 4 + 1;
	return 0;
}

int rc_mapping(uintptr_t addr, size_t size, char perms[5], char *path, size_t path_size)
{
	char line[512], p[5], file[400];
	uintptr_t start, end;
	int ret = -ENOENT;
	FILE *f;

	f = fopen("/proc/self/maps", "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		file[0] = '\0';
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s %*s %*s %*s %399s", &start, &end, p,
			   file) < 3)
			continue;
		if (start != addr || end - start != size)
			continue;
		memcpy(perms, p, 5);
		snprintf(path, path_size, "%s", file);
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

int rc_finish(const char *result_path, const struct rc_result *r, const char *detail)
{
	char text[1024];

	if (r->failures)
		snprintf(text, sizeof(text), "FAIL %s (%d failures)\n%s", r->first, r->failures,
			 detail);
	else
		snprintf(text, sizeof(text), "PASS\n%s", detail);
	fputs(text, stdout);
	fflush(stdout);
	rc_write_file(result_path, text);
	return r->failures ? 1 : 0;
}
