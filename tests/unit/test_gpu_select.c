// SPDX-License-Identifier: MIT
/*
 * AMDGPU_CRIU_GPUS (topology/gpu_select.h): render nodes and gpu_ids the
 * restore may use; anything else in the value is one clear error.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "topology/gpu_select.h"

static void unset_means_every_gpu(void **state)
{
	struct gpu_select sel;
	char err[256] = "";

	(void)state;
	assert_int_equal(gpu_select_parse(&sel, NULL, err, sizeof(err)), 0);
	assert_true(gpu_select_all(&sel));
	assert_true(gpu_select_allows(&sel, 1234, 128));
	assert_int_equal(gpu_select_parse(&sel, " , ", err, sizeof(err)), 0);
	assert_true(gpu_select_all(&sel));
}

static void nodes_and_ids(void **state)
{
	struct gpu_select sel;
	char err[256] = "";

	(void)state;
	assert_int_equal(gpu_select_parse(&sel, "renderD130,/dev/dri/renderD131 0xbeef, 4660", err,
					  sizeof(err)),
			 0);
	assert_false(gpu_select_all(&sel));
	assert_int_equal(sel.n_minors, 2);
	assert_int_equal(sel.n_gpu_ids, 2);
	assert_true(gpu_select_allows(&sel, 1, 130));
	assert_true(gpu_select_allows(&sel, 1, 131));
	assert_true(gpu_select_allows(&sel, 0xbeef, 128));
	assert_true(gpu_select_allows(&sel, 4660, 128));
	assert_false(gpu_select_allows(&sel, 1, 128));
}

static void bad_values_are_refused(void **state)
{
	static const char *const bad[] = {
		"renderD", "renderDx",	 "card0",     "0x",	   "0xzz", "-1",
		"0",	   "4294967296", "renderD-1", "/dev/dri/", "gpu1",
	};
	struct gpu_select sel;
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(gpu_select_parse(&sel, bad[i], err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, GPU_SELECT_ENV));
		assert_true(gpu_select_all(&sel));
	}
}

/* no byte below 0x20 nor above 0x7e: one printable line */
static void assert_printable(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			fail_msg("byte 0x%02x in \"%s\"", *p, s);
}

/* Numbers are digits only, all of them, once prefixed, in range: what strtoul lets by is refused.
 */
static void numbers_are_strict(void **state)
{
	static const char *const bad[] = {
		"\n128",
		"\v128",
		"\r128",
		"\f0x5eb8",
		"renderD\n128",
		"renderD\r130",
		"0x0x5eb8",
		"0X0x5eb8",
		"0x0X5eb8",
		"0x+5eb8",
		"0x-5eb8",
		"+24248",
		"renderD+130",
		"renderD0x82",
		"renderD0130",
		"024248",
		"renderD127",
		"renderD1",
		"renderD1048576",
		"renderD99999999999",
		"0x100000000",
		"0x",
		"renderD\x80\x31\x33\x30",
	};
	struct gpu_select sel;
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (gpu_select_parse(&sel, bad[i], err, sizeof(err)) != -EINVAL)
			fail_msg("%s=\"%s\" accepted: %u render nodes (first %u), %u gpu_ids "
				 "(first 0x%x)",
				 GPU_SELECT_ENV, bad[i], sel.n_minors, sel.minors[0], sel.n_gpu_ids,
				 sel.gpu_ids[0]);
		assert_non_null(strstr(err, GPU_SELECT_ENV));
		assert_printable(err);
		assert_true(gpu_select_all(&sel));
	}
	/* what is valid stays valid: the render minor range, hex with leading zeros */
	assert_int_equal(gpu_select_parse(&sel, "renderD1048575 0x00005eb8,0XBEEF 4294967295", err,
					  sizeof(err)),
			 0);
	assert_true(gpu_select_allows(&sel, 1, 1048575));
	assert_true(gpu_select_allows(&sel, 0x5eb8, 1));
	assert_true(gpu_select_allows(&sel, 0xbeef, 1));
	assert_true(gpu_select_allows(&sel, 4294967295u, 1));
}

/* The refusal shows the value escaped, on one line (a terminal title and a line break here). */
static void errors_are_printable(void **state)
{
	struct gpu_select sel;
	char err[512] = "";

	(void)state;
	assert_int_equal(
		gpu_select_parse(&sel, "renderD\x1b]0;x\x07\nforged: line", err, sizeof(err)),
		-EINVAL);
	assert_printable(err);
	assert_non_null(strstr(err, "'renderD\\x1b]0;x\\x07\\x0aforged:'"));
}

static void too_many(void **state)
{
	struct gpu_select sel;
	char text[GPU_SELECT_MAX * 12 + 32], err[256];
	size_t off = 0;
	int i;

	(void)state;
	for (i = 0; i <= GPU_SELECT_MAX; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "renderD%d,", 128 + i);
	assert_int_equal(gpu_select_parse(&sel, text, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "more than"));
}

static void from_the_environment(void **state)
{
	struct gpu_select sel;
	char err[256];

	(void)state;
	setenv(GPU_SELECT_ENV, "renderD129", 1);
	assert_int_equal(gpu_select_parse(&sel, getenv(GPU_SELECT_ENV), err, sizeof(err)), 0);
	assert_true(gpu_select_allows(&sel, 7, 129));
	assert_false(gpu_select_allows(&sel, 7, 128));
	unsetenv(GPU_SELECT_ENV);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(unset_means_every_gpu),  cmocka_unit_test(nodes_and_ids),
		cmocka_unit_test(bad_values_are_refused), cmocka_unit_test(too_many),
		cmocka_unit_test(from_the_environment),	  cmocka_unit_test(numbers_are_strict),
		cmocka_unit_test(errors_are_printable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
