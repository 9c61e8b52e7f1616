// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <cmocka.h>

#include "fixtures.h"

const char *const fixture_full_trees[6] = {VEGA10, MI210, MI300X, MI308X, MI300A, WORKSTN};

const char *fixtures_dir(void)
{
	const char *d = getenv("KFD_FIXTURES");

	return d && *d ? d : "tests/fixtures/kfd-topologies";
}

void fmt(char *buf, size_t len, const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(buf, len, f, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < len);
}

void fixture_path(char *buf, size_t len, const char *name)
{
	fmt(buf, len, "%s/%s", fixtures_dir(), name);
}
