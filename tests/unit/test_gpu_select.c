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
	assert_int_equal(gpu_select_from_env(&sel, err, sizeof(err)), 0);
	assert_true(gpu_select_allows(&sel, 7, 129));
	assert_false(gpu_select_allows(&sel, 7, 128));
	unsetenv(GPU_SELECT_ENV);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(unset_means_every_gpu),  cmocka_unit_test(nodes_and_ids),
		cmocka_unit_test(bad_values_are_refused), cmocka_unit_test(too_many),
		cmocka_unit_test(from_the_environment),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
