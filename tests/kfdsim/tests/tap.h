/* SPDX-License-Identifier: GPL-2.0 */
/* Minimal TAP output for the kfdsim guest tests. */
#ifndef KFDSIM_TAP_H
#define KFDSIM_TAP_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

static inline void tap_vok(int cond, const char *fmt, va_list ap)
{
	tap_n++;
	if (!cond)
		tap_failed++;
	printf("%sok %d - ", cond ? "" : "not ", tap_n);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
}

__attribute__((format(printf, 2, 3)))
static inline int ok(int cond, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vok(cond, fmt, ap);
	va_end(ap);
	return cond;
}

/* ok() for a call expected to fail with errno @want (rc is its return) */
__attribute__((format(printf, 3, 4)))
static inline int ok_errno(long rc, int want, const char *fmt, ...)
{
	int err = errno, cond = rc == -1 && err == want;
	va_list ap;

	va_start(ap, fmt);
	tap_vok(cond, fmt, ap);
	va_end(ap);
	if (!cond)
		printf("#   got rc %ld errno %d (%s), want errno %d (%s)\n", rc,
		       rc == -1 ? err : 0, rc == -1 ? strerror(err) : "-", want, strerror(want));
	return cond;
}

__attribute__((format(printf, 1, 2)))
static inline void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
