// SPDX-License-Identifier: MIT
/*
 * AMDGPU_CRIU_GPUS (topology/gpu_select.h): render nodes, gpu_ids, PCI
 * addresses and unique_ids the restore may use; anything else in the value
 * is one clear error; a name no GPU of the node has is refused, naming the
 * property, its value and the node's values.
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

#include "fixtures.h"
#include "topology/gpu_select.h"
#include "topology/topology.h"

/* May the GPU with this gpu_id and render minor (and no other identity) be used? */
static bool allows(const struct gpu_select *sel, uint32_t gpu_id, uint32_t minor)
{
	struct gpu_identity id = {.gpu_id = gpu_id, .render_minor = minor};

	return gpu_select_allows(sel, &id);
}

static void unset_means_every_gpu(void **state)
{
	struct gpu_select sel;
	char err[256] = "";

	(void)state;
	assert_int_equal(gpu_select_parse(&sel, NULL, err, sizeof(err)), 0);
	assert_true(gpu_select_all(&sel));
	assert_true(allows(&sel, 1234, 128));
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
	assert_true(allows(&sel, 1, 130));
	assert_true(allows(&sel, 1, 131));
	assert_true(allows(&sel, 0xbeef, 128));
	assert_true(allows(&sel, 4660, 128));
	assert_false(allows(&sel, 1, 128));
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
	assert_true(allows(&sel, 1, 1048575));
	assert_true(allows(&sel, 0x5eb8, 1));
	assert_true(allows(&sel, 0xbeef, 1));
	assert_true(allows(&sel, 4294967295u, 1));
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
	assert_true(allows(&sel, 7, 129));
	assert_false(allows(&sel, 7, 128));
	unsetenv(GPU_SELECT_ENV);
}

/* Stable identities: PCI addresses and unique_ids, strictly written. */
static void pci_and_unique_ids(void **state)
{
	static const char *const bad[] = {
		"63:00.8",
		"63:20.0",
		"063:00.0",
		"0000:63:00",
		"000:63:00.0",
		"000000000:63:00.0",
		"0000:63:00.0.0",
		"0000-63:00.0",
		"0000:6g:00.0",
		"0000:63:00:0",
		"0000::63:00.0",
		"+000:63:00.0",
		"93bb3629c01aea1",
		"93bb3629c01aea1cc",
		"0x93bb3629c01aea1",
		"0000000000000000",
		"0x0x93bb3629c01aea",
		"93bb3629c01aea1g",
	};
	struct gpu_select sel;
	struct gpu_identity a = {.gpu_id = 1,
				 .render_minor = 1,
				 .domain = 0,
				 .location_id = 0x6300},
			    b = {.gpu_id = 2, .domain = 1, .location_id = 0xa401},
			    c = {.gpu_id = 3, .unique_id = 0x93bb3629c01aea1cull};
	char err[512];

	(void)state;
	assert_int_equal(gpu_select_parse(&sel, "0000:63:00.0, 0001:a4:00.1", err, sizeof(err)), 0);
	assert_int_equal(sel.n_pcis, 2);
	assert_true(gpu_select_allows(&sel, &a));
	assert_true(gpu_select_allows(&sel, &b));
	assert_false(gpu_select_allows(&sel, &c));
	assert_int_equal(gpu_select_parse(&sel, "63:00.0 0x93BB3629C01AEA1C", err, sizeof(err)), 0);
	assert_true(gpu_select_allows(&sel, &a));
	assert_false(gpu_select_allows(&sel, &b));
	assert_true(gpu_select_allows(&sel, &c));
	assert_int_equal(gpu_select_parse(&sel, "93bb3629c01aea1c", err, sizeof(err)), 0);
	assert_int_equal(sel.n_unique_ids, 1);
	assert_true(gpu_select_allows(&sel, &c));
	assert_int_equal(gpu_select_parse(&sel, "00010000:ff:1f.7", err, sizeof(err)), 0);
	assert_int_equal(sel.pcis[0].domain, 0x10000);
	assert_int_equal(sel.pcis[0].location_id, 0xffff);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (gpu_select_parse(&sel, bad[i], err, sizeof(err)) != -EINVAL)
			fail_msg("\"%s\" accepted", bad[i]);
		assert_non_null(strstr(err, GPU_SELECT_ENV));
		assert_true(gpu_select_all(&sel));
	}
}

/* On a real topology: a PCI address names one node, a unique_id every partition of a device. */
static void on_a_capture(void **state)
{
	struct kfd_topology t;
	uint32_t out[64];
	struct gpu_select sel;
	char path[512], err[1024];

	(void)state;
	/* MI308X in CPX: each device 4 partitions, 0000:0a:00.0 to .3 nodes 2-5, unique_id
	 * 084cafeae17e7696; device a4 nodes 10-13 */
	fixture_path(path, sizeof(path), MI308X);
	assert_int_equal(topo_load(path, &t, err, sizeof(err)), 0);
	assert_int_equal(gpu_select_parse(&sel, "0000:a4:00.1,084cafeae17e7696", err, sizeof(err)),
			 0);
	assert_int_equal(gpu_select_check(&sel, &t, err, sizeof(err)), 0);
	assert_int_equal(gpu_select_nodes(&sel, &t, out, NULL), 5);
	assert_int_equal(out[0], 2);
	assert_int_equal(out[3], 5);
	assert_int_equal(out[4], 11);
	assert_int_equal(gpu_select_parse(&sel, "a4:00.3", err, sizeof(err)), 0);
	assert_int_equal(gpu_select_nodes(&sel, &t, out, NULL), 1);
	assert_int_equal(out[0], 13);

	/* a name no GPU has: refused, naming the property, the value and the node's values */
	assert_int_equal(gpu_select_parse(&sel, "0000:a4:00.0,0000:c1:00.0", err, sizeof(err)), 0);
	assert_int_equal(gpu_select_check(&sel, &t, err, sizeof(err)), -ENODEV);
	assert_string_equal(err, GPU_SELECT_ENV " names PCI address 0000:c1:00.0, which no usable "
						"GPU of this node has (its GPUs' PCI addresses: "
						"0000:0a:00.0, 0000:0a:00.1, 0000:0a:00.2, "
						"0000:0a:00.3, 0000:80:00.0, 0000:80:00.1, "
						"0000:80:00.2, 0000:80:00.3, and 24 more)");
	assert_int_equal(gpu_select_parse(&sel, "renderD128 renderD300", err, sizeof(err)), 0);
	assert_int_equal(gpu_select_check(&sel, &t, err, sizeof(err)), -ENODEV);
	assert_non_null(strstr(err, "names render node renderD300"));
	assert_int_equal(gpu_select_parse(&sel, "0x0000000000000001", err, sizeof(err)), 0);
	assert_int_equal(gpu_select_check(&sel, &t, err, sizeof(err)), -ENODEV);
	assert_non_null(strstr(err, "names unique_id 0000000000000001"));
	assert_non_null(strstr(err, "unique_ids: 084cafeae17e7696, "));
	assert_int_equal(gpu_select_parse(&sel, "0x5eb8 7", err, sizeof(err)), 0);
	assert_int_equal(gpu_select_check(&sel, &t, err, sizeof(err)), -ENODEV);
	assert_non_null(strstr(err, "names gpu_id 0x7,"));
	topo_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(unset_means_every_gpu),  cmocka_unit_test(nodes_and_ids),
		cmocka_unit_test(bad_values_are_refused), cmocka_unit_test(too_many),
		cmocka_unit_test(from_the_environment),	  cmocka_unit_test(numbers_are_strict),
		cmocka_unit_test(errors_are_printable),	  cmocka_unit_test(pci_and_unique_ids),
		cmocka_unit_test(on_a_capture),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
