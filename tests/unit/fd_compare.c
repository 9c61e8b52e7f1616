// SPDX-License-Identifier: MIT
/* Comparing two files in the unit tests (see fd_compare.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "fd_compare.h"

void assert_same_bytes(int a, int b, uint64_t size)
{
	static uint8_t x[1 << 16], y[1 << 16];
	uint64_t off;
	size_t n;

	for (off = 0; off < size; off += n) {
		n = size - off < sizeof(x) ? (size_t)(size - off) : sizeof(x);
		assert_int_equal(pread(a, x, n, (off_t)off), (ssize_t)n);
		assert_int_equal(pread(b, y, n, (off_t)off), (ssize_t)n);
		if (memcmp(x, y, n))
			fail_msg("contents differ in [0x%" PRIx64 ", +%zu)", off, n);
	}
}
