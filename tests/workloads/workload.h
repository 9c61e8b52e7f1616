/* SPDX-License-Identifier: MIT */
/*
 * What the host tests' self-checking workloads share: files written whole
 * (the tests read a file only once it has its name), sleeping, a monotonic
 * clock. Header-only: each workload is one program built from one .c.
 */
#ifndef AMDGPU_CRIU_TESTS_WORKLOAD_H
#define AMDGPU_CRIU_TESTS_WORKLOAD_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* name in the current directory, written as .name.tmp and renamed: 0 or -1 */
static inline int write_file(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static inline int write_file(const char *name, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	int fd, ret;

	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	va_start(ap, fmt);
	ret = vdprintf(fd, fmt, ap);
	va_end(ap);
	if (close(fd) || ret < 0 || rename(tmp, name))
		return -1;
	return 0;
}

static inline void sleep_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static inline int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
