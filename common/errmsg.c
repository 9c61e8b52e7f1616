// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>

#include "common/errmsg.h"

int errmsg_set(char *buf, size_t len, int ret, const char *fmt, ...)
{
	va_list ap;

	if (buf && len) {
		va_start(ap, fmt);
		vsnprintf(buf, len, fmt, ap);
		va_end(ap);
	}
	return ret;
}
