// SPDX-License-Identifier: MIT
/*
 * Matcher tests on synthetic topologies (tests/unit/match_synth.h): property
 * rules, environment switches, structural rules, preferences, reasons,
 * invalid input, determinism and speed. Fixture-based scenarios are in
 * test_match_fixtures.c.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "checks_env.h"
#include "topology/match.h"
#include "topology/match_int.h" /* IMPROVE_STEPS */
#include "match_synth.h"

static const char *const env_vars[] = {
	"KFD_CAPABILITY_CHECK",	  "KFD_VRAM_SIZE_CHECK", "KFD_NUM_GWS_CHECK",
	"KFD_CACHES_COUNT_CHECK", "KFD_FW_VER_CHECK",	 "KFD_SDMA_FW_VER_CHECK",
	"KFD_NUMA_CHECK",
};

static void unset_env(void)
{
	for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++)
		unsetenv(env_vars[i]);
}

static int reset_env(void **state)
{
	(void)state;
	unset_env();
	return 0;
}

static void run_match(const struct match_request *req, struct match_result *res)
{
	int ret = topo_match(req, res);

	if (ret)
		fail_msg("topo_match returned %d: %s", ret, res->reason);
}

static void expect_compatible(const struct match_request *req, struct match_result *res)
{
	run_match(req, res);
	if (!res->compatible)
		fail_msg("expected a mapping, got: %s", res->reason);
	assert_string_equal(res->reason, "");
	assert_int_equal(res->n_map, req->src_nodes ? req->n_src_nodes : res->n_map);
}

static void expect_incompatible(const struct match_request *req, struct match_result *res)
{
	run_match(req, res);
	if (res->compatible)
		fail_msg("expected no mapping, got one (first: node %u -> node %u)",
			 res->map[0].src_node, res->map[0].dst_node);
	assert_null(res->map);
	assert_true(strlen(res->reason) > 0);
	assert_null(strchr(res->reason, '\n'));
}

/* ---- checks and environment ------------------------------------------------ */

static void test_checks_default_all_on(void **state)
{
	struct match_checks c;

	(void)state;
	memset(&c, 0, sizeof(c));
	match_checks_default(&c);
	assert_true(c.capability && c.vram_size && c.num_gws && c.caches_count && c.fw_version &&
		    c.sdma_fw_version && c.numa);
}

static void test_checks_env_values(void **state)
{
	struct match_checks c;
	char err[256];

	(void)state;
	assert_int_equal(checks_read(&c, err, sizeof(err)), 0);
	assert_true(c.capability && c.vram_size && c.numa);

	setenv("KFD_VRAM_SIZE_CHECK", "0", 1);
	setenv("KFD_NUMA_CHECK", "no", 1);
	setenv("KFD_FW_VER_CHECK", "NO", 1);
	setenv("KFD_CAPABILITY_CHECK", "yes", 1);
	setenv("KFD_NUM_GWS_CHECK", "1", 1);
	setenv("KFD_CACHES_COUNT_CHECK", "0", 1);
	setenv("KFD_SDMA_FW_VER_CHECK", "No", 1);
	assert_int_equal(checks_read(&c, err, sizeof(err)), 0);
	assert_false(c.vram_size);
	assert_false(c.numa);
	assert_false(c.fw_version);
	assert_true(c.capability);
	assert_true(c.num_gws);
	assert_false(c.caches_count);
	assert_false(c.sdma_fw_version);
}

static void test_checks_env_invalid(void **state)
{
	struct match_checks c;
	char err[256];

	(void)state;
	setenv("KFD_NUM_GWS_CHECK", "maybe", 1);
	assert_int_equal(checks_read(&c, err, sizeof(err)), -EINVAL);
	assert_contains(err, "KFD_NUM_GWS_CHECK");
	assert_contains(err, "maybe");
	setenv("KFD_NUM_GWS_CHECK", "", 1); /* empty: unset, as for every option */
	assert_int_equal(checks_read(&c, err, sizeof(err)), 0);
	assert_true(c.num_gws);
}

/* ---- per-GPU compatibility ------------------------------------------------- */

struct two_gpus {
	struct kfd_topology *t;
	struct kfd_node *s, *d;
	struct match_checks checks;
};

static void two_gpus_init(struct two_gpus *g)
{
	g->t = synth_new(3);
	synth_cpu(g->t, 0);
	g->s = synth_gpu(g->t, 1, 11, 0, true);
	g->d = synth_gpu(g->t, 2, 22, 0, true);
	match_checks_default(&g->checks);
}

static void test_compat_identical(void **state)
{
	struct two_gpus g;
	char why[256];

	(void)state;
	two_gpus_init(&g);
	assert_int_equal(match_gpu_compat(&g.checks, g.s, g.d, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	synth_free(g.t);
}

static void test_compat_equal_rules(void **state)
{
	static const enum kfd_prop equal_props[] = {
		KFD_PROP_simd_count,
		KFD_PROP_array_count,
		KFD_PROP_simd_arrays_per_engine,
		KFD_PROP_cu_per_simd_array,
		KFD_PROP_simd_per_cu,
		KFD_PROP_max_waves_per_simd,
		KFD_PROP_lds_size_in_kb,
		KFD_PROP_wave_front_size,
		KFD_PROP_max_slots_scratch_cu,
		KFD_PROP_gfx_target_version,
		KFD_PROP_num_xcc,
		KFD_PROP_vendor_id,
		KFD_PROP_device_id,
		KFD_PROP_num_sdma_engines,
		KFD_PROP_num_sdma_xgmi_engines,
		KFD_PROP_num_sdma_queues_per_engine,
		KFD_PROP_num_cp_queues,
		KFD_PROP_capability,
	};
	(void)state;
	for (size_t k = 0; k < sizeof(equal_props) / sizeof(equal_props[0]); k++) {
		struct two_gpus g;
		char why[256], expect[128];
		uint64_t *field;

		two_gpus_init(&g);
		field = (uint64_t *)&g.d->props + equal_props[k];
		/* a larger destination value is not good enough for these */
		*field += 1;
		assert_int_equal(match_gpu_compat(&g.checks, g.s, g.d, why, sizeof(why)), 1);
		snprintf(expect, sizeof(expect),
			 "%s: source %llu, destination %llu (must be equal)",
			 kfd_prop_name(equal_props[k]),
			 (unsigned long long)kfd_prop_get(g.s, equal_props[k]),
			 (unsigned long long)kfd_prop_get(g.d, equal_props[k]));
		assert_string_equal(why, expect);
		synth_free(g.t);
	}
}

static void test_compat_at_least_rules(void **state)
{
	static const enum kfd_prop ge_props[] = {
		KFD_PROP_caches_count,
		KFD_PROP_num_gws,
		KFD_PROP_fw_version,
		KFD_PROP_sdma_fw_version,
	};
	(void)state;
	for (size_t k = 0; k < sizeof(ge_props) / sizeof(ge_props[0]); k++) {
		struct two_gpus g;
		char why[256];
		uint64_t *field;

		two_gpus_init(&g);
		field = (uint64_t *)&g.d->props + ge_props[k];
		*field += 5;
		assert_int_equal(match_gpu_compat(&g.checks, g.s, g.d, NULL, 0), 0);
		*field -= 6;
		assert_int_equal(match_gpu_compat(&g.checks, g.s, g.d, why, sizeof(why)), 1);
		assert_contains(why, kfd_prop_name(ge_props[k]));
		assert_contains(why, "(destination must be >=)");
		synth_free(g.t);
	}
}

static void test_compat_vram(void **state)
{
	struct two_gpus g;
	char why[256];

	(void)state;
	two_gpus_init(&g);
	g.s->vram_size = 68702699520ULL;
	g.d->vram_size = 68585259008ULL;
	assert_int_equal(match_gpu_compat(&g.checks, g.s, g.d, why, sizeof(why)), 1);
	assert_string_equal(why, "vram_size: source 68702699520, destination 68585259008 "
				 "(destination must be >=)");
	g.checks.vram_size = false;
	assert_int_equal(match_gpu_compat(&g.checks, g.s, g.d, why, sizeof(why)), 0);

	g.d->vram_heap_type = KFD_HEAP_FB_PRIVATE;
	assert_int_equal(match_gpu_compat(&g.checks, g.s, g.d, why, sizeof(why)), 1);
	assert_contains(why, "vram_heap_type: source 1 (public), destination 2 (private)");
	/* no mem_banks captured on one side: nothing to compare */
	g.d->vram_heap_type = 0;
	g.checks.vram_size = true;
	assert_int_equal(match_gpu_compat(&g.checks, g.s, g.d, why, sizeof(why)), 0);
	synth_free(g.t);
}

static void test_compat_switches(void **state)
{
	struct two_gpus g;

	(void)state;
	two_gpus_init(&g);
	g.d->props.capability ^= 0x100;
	g.d->props.num_gws = 0;
	g.d->props.caches_count = 1;
	g.d->props.fw_version = 1;
	g.d->props.sdma_fw_version = 1;
	assert_int_equal(match_gpu_compat(&g.checks, g.s, g.d, NULL, 0), 5);
	g.checks.capability = false;
	assert_int_equal(match_gpu_compat(&g.checks, g.s, g.d, NULL, 0), 4);
	g.checks.num_gws = false;
	assert_int_equal(match_gpu_compat(&g.checks, g.s, g.d, NULL, 0), 3);
	g.checks.caches_count = false;
	assert_int_equal(match_gpu_compat(&g.checks, g.s, g.d, NULL, 0), 2);
	g.checks.fw_version = false;
	assert_int_equal(match_gpu_compat(&g.checks, g.s, g.d, NULL, 0), 1);
	g.checks.sdma_fw_version = false;
	assert_int_equal(match_gpu_compat(&g.checks, g.s, g.d, NULL, 0), 0);
	synth_free(g.t);
}

/* Old kernels lack keys: only keys on both sides are compared; link counts never. */
static void test_compat_absent_keys_and_link_counts(void **state)
{
	struct two_gpus g;
	char why[256];

	(void)state;
	two_gpus_init(&g);
	SYNTH_UNSET(g.s, gfx_target_version);
	SYNTH_UNSET(g.s, num_gws);
	SYNTH_UNSET(g.s, num_sdma_engines);
	SYNTH_UNSET(g.s, num_xcc);
	g.d->props.gfx_target_version = 1;
	g.d->props.num_gws = 0;
	g.d->props.num_sdma_engines = 7;
	g.d->props.num_xcc = 8;
	SYNTH_SET(g.s, io_links_count, 8);
	SYNTH_SET(g.d, io_links_count, 63);
	SYNTH_SET(g.s, p2p_links_count, 1);
	SYNTH_SET(g.d, p2p_links_count, 7);
	assert_int_equal(match_gpu_compat(&g.checks, g.s, g.d, why, sizeof(why)), 0);
	/* but a key present on both sides is compared */
	SYNTH_SET(g.s, num_xcc, 1);
	assert_int_equal(match_gpu_compat(&g.checks, g.s, g.d, why, sizeof(why)), 1);
	assert_contains(why, "num_xcc: source 1, destination 8");
	synth_free(g.t);
}

/* ---- identity, moves, structure ------------------------------------------- */

static void test_identity_two_hives(void **state)
{
	struct kfd_topology *t = synth_two_hives(1000);
	struct match_request req = synth_request(t, t);
	struct match_result res;

	(void)state;
	expect_compatible(&req, &res);
	assert_int_equal(res.n_map, 8);
	for (size_t i = 0; i < res.n_map; i++) {
		assert_int_equal(res.map[i].src_node, 2 + i);
		assert_int_equal(res.map[i].dst_node, res.map[i].src_node);
		assert_int_equal(res.map[i].dst_gpu_id, res.map[i].src_gpu_id);
		assert_int_equal(res.map[i].dst_render_minor, 128 + 2 + i);
	}
	assert_true(res.search_steps >= 8);
	match_result_free(&res);
	synth_free(t);
}

/* Identity means the same node index and the same gpu_id; one of the two is not enough. */
static void test_identity_needs_node_and_gpu_id(void **state)
{
	struct kfd_topology *src = synth_two_hives(1000), *dst = synth_two_hives(1000);
	uint32_t src_nodes[] = {3}, dst_nodes[] = {2, 3};
	struct match_request req = synth_request(src, dst);
	struct match_result res;

	(void)state;
	req.src_nodes = src_nodes;
	req.n_src_nodes = 1;
	req.dst_nodes = dst_nodes;
	req.n_dst_nodes = 2;
	/* the identity wins over the lower node index */
	expect_compatible(&req, &res);
	assert_int_equal(res.map[0].dst_node, 3);
	assert_int_equal(res.map[0].dst_gpu_id, 1003);
	match_result_free(&res);

	/* same index, other gpu_id: not the identity, so the lowest index wins */
	dst->nodes[3].gpu_id = 1099;
	expect_compatible(&req, &res);
	assert_int_equal(res.map[0].dst_node, 2);
	match_result_free(&res);

	/* same gpu_id on another node: not the identity either */
	dst->nodes[4].gpu_id = 1003;
	dst_nodes[1] = 4;
	expect_compatible(&req, &res);
	assert_int_equal(res.map[0].dst_node, 2);
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

static void test_hive_move(void **state)
{
	struct kfd_topology *src = synth_two_hives(1000), *dst = synth_two_hives(2000);
	uint32_t src_nodes[] = {2, 3, 4, 5}, dst_nodes[] = {6, 7, 8, 9};
	struct match_request req = synth_request(src, dst);
	struct match_result res;

	(void)state;
	req.src_nodes = src_nodes;
	req.n_src_nodes = 4;
	req.dst_nodes = dst_nodes;
	req.n_dst_nodes = 4;
	expect_compatible(&req, &res);
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(res.map[i].src_node, src_nodes[i]);
		assert_in_range(res.map[i].dst_node, 6, 9);
		assert_int_equal(res.map[i].dst_gpu_id, 2000 + res.map[i].dst_node);
	}
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

static void test_xgmi_pair_cannot_split_hives(void **state)
{
	struct kfd_topology *t = synth_two_hives(1000);
	uint32_t src_nodes[] = {2, 3}, dst_nodes[] = {5, 6};
	struct match_request req = synth_request(t, t);
	struct match_result res;

	(void)state;
	req.src_nodes = src_nodes;
	req.n_src_nodes = 2;
	req.dst_nodes = dst_nodes;
	req.n_dst_nodes = 2;
	req.checks.numa = false;
	expect_incompatible(&req, &res);
	assert_contains(res.reason, "source GPUs node 2 (gpu_id 1002) and node 3 (gpu_id 1003) are "
				    "linked by xGMI (type 11, weight 15)");
	assert_contains(res.reason, "best tried node 5 (gpu_id 1005) and node 6 (gpu_id 1006) "
				    "linked by none");
	match_result_free(&res);

	/* two GPUs of hive A fit into hive B */
	dst_nodes[0] = 6;
	dst_nodes[1] = 9;
	expect_compatible(&req, &res);
	assert_int_equal(synth_dst_of(&res, 2), 6);
	assert_int_equal(synth_dst_of(&res, 3), 9);
	match_result_free(&res);
	synth_free(t);
}

/* GPUs without a link between them may land on linked ones (stronger is fine). */
static void test_unlinked_onto_xgmi(void **state)
{
	struct kfd_topology *t = synth_two_hives(1000);
	uint32_t src_nodes[] = {2, 6}, dst_nodes[] = {3, 4};
	struct match_request req = synth_request(t, t);
	struct match_result res;

	(void)state;
	req.src_nodes = src_nodes;
	req.n_src_nodes = 2;
	req.dst_nodes = dst_nodes;
	req.n_dst_nodes = 2;
	expect_compatible(&req, &res);
	match_result_free(&res);
	synth_free(t);
}

/* MI300A-style: GPU attached to its CPU by xGMI must stay attached by xGMI. */
static void test_cpu_link_not_weaker(void **state)
{
	struct kfd_topology *src = synth_two_hives(1000), *dst = synth_two_hives(2000);
	uint32_t src_nodes[] = {2};
	struct match_request req = synth_request(src, dst);
	struct match_result res;

	(void)state;
	src->nodes[2].io_links[0].type = KFD_IOLINK_XGMI;
	src->nodes[2].io_links[0].weight = 13;
	req.src_nodes = src_nodes;
	req.n_src_nodes = 1;
	expect_incompatible(&req, &res);
	assert_contains(res.reason, "source GPU node 2 (gpu_id 1002): no compatible destination; "
				    "best candidate node 2 (gpu_id 2002): link to CPU: source xGMI "
				    "(type 11, weight 13), destination PCIe (type 2, weight 20)");
	match_result_free(&res);

	dst->nodes[8].io_links[0].type = KFD_IOLINK_XGMI;
	expect_compatible(&req, &res);
	assert_int_equal(res.map[0].dst_node, 8);
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

static void test_large_bar_kept(void **state)
{
	struct kfd_topology *src = synth_new(3), *dst = synth_new(4);
	struct match_request req = synth_request(src, dst);
	struct match_result res;

	(void)state;
	synth_cpu(src, 0);
	synth_gpu(src, 1, 11, 0, true);
	synth_gpu(src, 2, 12, 0, false);
	synth_cpu(dst, 0);
	synth_gpu(dst, 1, 21, 0, false);
	synth_gpu(dst, 2, 22, 0, false);
	synth_gpu(dst, 3, 23, 0, true);
	/* same heap type everywhere: only the CPU->GPU link tells them apart */
	for (size_t i = 1; i < 4; i++) {
		dst->nodes[i].vram_heap_type = KFD_HEAP_FB_PUBLIC;
		if (i < 3)
			src->nodes[i].vram_heap_type = KFD_HEAP_FB_PUBLIC;
	}
	expect_compatible(&req, &res);
	assert_int_equal(synth_dst_of(&res, 1), 3);
	assert_int_equal(synth_dst_of(&res, 2), 1);
	match_result_free(&res);

	dst->nodes[0].n_io_links = 0; /* drop the CPU->GPU link of node 3 */
	expect_incompatible(&req, &res);
	assert_contains(res.reason, "source GPU node 1 (gpu_id 11): no compatible destination");
	assert_contains(res.reason, "large BAR");
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

static void test_numa_shared_cpu(void **state)
{
	struct kfd_topology *t = synth_two_hives(1000);
	uint32_t src_nodes[] = {2, 6}, dst_nodes[] = {3, 7};
	struct match_request req = synth_request(t, t);
	struct match_result res;

	(void)state;
	/* nodes 2 and 6 have no direct link; make them share CPU 0 */
	t->nodes[6].io_links[0].node_to = 0;
	req.src_nodes = src_nodes;
	req.n_src_nodes = 2;
	req.dst_nodes = dst_nodes;
	req.n_dst_nodes = 2;
	expect_incompatible(&req, &res);
	assert_contains(res.reason, "share CPU node 0");
	assert_contains(res.reason, "KFD_NUMA_CHECK=0");
	match_result_free(&res);

	setenv("KFD_NUMA_CHECK", "0", 1);
	assert_int_equal(checks_read(&req.checks, res.reason, sizeof(res.reason)), 0);
	expect_compatible(&req, &res);
	match_result_free(&res);
	synth_free(t);
}

/* Sources sharing a CPU node need a CPU node with enough GPUs for all of them. */
static void test_numa_group_does_not_fit(void **state)
{
	struct kfd_topology *src = synth_two_hives(1000), *dst = synth_two_hives(2000);
	uint32_t src_nodes[] = {2, 6, 7};
	struct match_request req = synth_request(src, dst);
	struct match_result res;

	(void)state;
	/* three unlinked GPUs on CPU 0; the destination has at most 2 free per CPU */
	for (uint32_t i = 6; i < 8; i++)
		src->nodes[i].io_links[0].node_to = 0;
	src->nodes[2].n_io_links = 1;
	src->nodes[6].n_io_links = 1;
	src->nodes[7].n_io_links = 1;
	for (uint32_t i = 2; i < 10; i++)
		dst->nodes[i].io_links[0].node_to = i % 2;
	for (uint32_t i = 2; i < 10; i++)
		dst->nodes[i].n_io_links = 1;
	dst->nodes[0].n_io_links = 0;
	dst->nodes[1].n_io_links = 0;
	for (uint32_t i = 2; i < 10; i++) {
		dst->nodes[i].vram_heap_type = KFD_HEAP_FB_PRIVATE;
		src->nodes[i].vram_heap_type = KFD_HEAP_FB_PRIVATE;
	}
	src->nodes[0].n_io_links = 0;
	src->nodes[1].n_io_links = 0;
	/* destination CPU 0 keeps only nodes 2 and 4 usable: 6 and 8 have less VRAM */
	dst->nodes[6].vram_size = dst->nodes[8].vram_size = 1;
	req.src_nodes = src_nodes;
	req.n_src_nodes = 3;
	req.checks.numa = true;
	/* CPU 1 has 3, 5, 7, 9: that fits */
	expect_compatible(&req, &res);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(res.map[i].dst_node % 2, 1);
	match_result_free(&res);
	dst->nodes[9].vram_size = dst->nodes[7].vram_size = 1;
	expect_incompatible(&req, &res);
	assert_contains(res.reason,
			"source GPUs node 2 (gpu_id 1002), node 6 (gpu_id 1006), node 7 "
			"(gpu_id 1007) share CPU node 0; no destination CPU node");
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

/* Two CPU node groups, each fits alone on destination CPU 0, not both at once. */
static void test_numa_groups_conflict(void **state)
{
	struct kfd_topology *src = synth_new(6), *dst = synth_new(6);
	struct match_request req = synth_request(src, dst);
	struct match_result res;

	(void)state;
	for (uint32_t c = 0; c < 2; c++) {
		synth_cpu(src, c);
		synth_cpu(dst, c);
	}
	for (uint32_t i = 2; i < 6; i++) {
		synth_gpu(src, i, 10 + i, i < 4 ? 0 : 1, true);
		synth_gpu(dst, i, 20 + i, i < 5 ? 0 : 1, true);
	}
	expect_incompatible(&req, &res);
	assert_string_equal(res.reason,
			    "source GPU groups fit the destination one by one but not together: on "
			    "CPU node 0 (node 2 (gpu_id 12), node 3 (gpu_id 13)); on CPU node 1 "
			    "(node 4 (gpu_id 14), node 5 (gpu_id 15)) (KFD_NUMA_CHECK=0 drops the "
			    "CPU node groups)");
	match_result_free(&res);
	req.checks.numa = false;
	expect_compatible(&req, &res);
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

/* ---- counts, Hall conflicts, property failures ------------------------------ */

static void test_too_few_destinations(void **state)
{
	struct kfd_topology *t = synth_two_hives(1000);
	uint32_t src_nodes[] = {2, 3, 4, 5}, dst_nodes[] = {8, 9};
	struct match_request req = synth_request(t, t);
	struct match_result res;

	(void)state;
	req.src_nodes = src_nodes;
	req.n_src_nodes = 4;
	req.dst_nodes = dst_nodes;
	req.n_dst_nodes = 2;
	expect_incompatible(&req, &res);
	assert_string_equal(res.reason,
			    "checkpoint has 4 GPUs, only 2 destination GPUs are usable: "
			    "node 8 (gpu_id 1008), node 9 (gpu_id 1009)");
	match_result_free(&res);
	synth_free(t);
}

/* Without a destination list, the GPUs left out are named as ranges, with why. */
static void test_too_few_names_skipped(void **state)
{
	struct kfd_topology *src = synth_two_hives(1000), *dst = synth_two_hives(2000);
	uint32_t src_nodes[] = {2, 3, 4};
	struct match_request req = synth_request(src, dst);
	struct match_result res;

	(void)state;
	for (uint32_t n = 2; n <= 9; n++)
		if (n != 6 && n != 8)
			dst->nodes[n].gpu_id = 0;
	req.src_nodes = src_nodes;
	req.n_src_nodes = 3;
	expect_incompatible(&req, &res);
	assert_string_equal(res.reason,
			    "checkpoint has 3 GPUs, only 2 destination GPUs are usable: node 6 "
			    "(gpu_id 2006), node 8 (gpu_id 2008); not usable: GPU nodes 2-5, 7, 9 "
			    "(no gpu_id: gpu_id file missing or 0)");
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

static void test_no_compatible_destination_reason(void **state)
{
	struct kfd_topology *src = synth_two_hives(1000), *dst = synth_two_hives(2000);
	uint32_t src_nodes[] = {3};
	struct match_request req = synth_request(src, dst);
	struct match_result res;

	(void)state;
	src->nodes[3].vram_size = 68702699520ULL;
	for (uint32_t i = 2; i < 10; i++) {
		dst->nodes[i].vram_size = 68585259008ULL;
		dst->nodes[i].props.fw_version = 91; /* two failures everywhere ... */
	}
	dst->nodes[9].props.fw_version = 92; /* ... but one on node 9: the best candidate */
	req.src_nodes = src_nodes;
	req.n_src_nodes = 1;
	expect_incompatible(&req, &res);
	assert_string_equal(res.reason,
			    "source GPU node 3 (gpu_id 1003): no compatible destination; best "
			    "candidate node 9 (gpu_id 2009): vram_size: source 68702699520, "
			    "destination 68585259008 (destination must be >=)");
	match_result_free(&res);

	setenv("KFD_VRAM_SIZE_CHECK", "NO", 1);
	assert_int_equal(checks_read(&req.checks, res.reason, sizeof(res.reason)), 0);
	expect_compatible(&req, &res);
	assert_int_equal(res.map[0].dst_node, 9);
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

static void test_hall_conflict(void **state)
{
	struct kfd_topology *src = synth_two_hives(1000), *dst = synth_two_hives(2000);
	uint32_t src_nodes[] = {2, 6, 7, 8};
	struct match_request req = synth_request(src, dst);
	struct match_result res;

	(void)state;
	/* three sources need 128 GiB; only destination nodes 4 and 5 have it */
	src->nodes[6].vram_size = src->nodes[7].vram_size = src->nodes[8].vram_size =
		128 * SYNTH_GIB;
	dst->nodes[4].vram_size = dst->nodes[5].vram_size = 128 * SYNTH_GIB;
	req.src_nodes = src_nodes;
	req.n_src_nodes = 4;
	expect_incompatible(&req, &res);
	assert_string_equal(
		res.reason,
		"3 source GPUs compete for 2 compatible destination GPUs (source node 6 "
		"(gpu_id 1006) cannot use node 2 (gpu_id 2002): vram_size: source "
		"137438953472, destination 68719476736 (destination must be >=)): "
		"sources node 6 (gpu_id 1006), node 7 (gpu_id 1007), node 8 (gpu_id "
		"1008); destinations node 4 (gpu_id 2004), node 5 (gpu_id 2005)");
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

/*
 * A greedy matcher that gives each source its first candidate fails here:
 * the small source comes first and its first candidate is the only large
 * destination partition.
 */
static void test_vram_greedy_trap(void **state)
{
	struct kfd_topology *src = synth_partitions(4, 4, 100), *dst = synth_partitions(4, 4, 200);
	uint32_t src_nodes[] = {5, 2, 3, 4};
	struct match_request req = synth_request(src, dst);
	struct match_result res;
	const uint64_t big = 51539607552ULL, small = 51522830336ULL;

	(void)state;
	for (uint32_t i = 2; i < 18; i++) {
		src->nodes[i].vram_size = (i - 2) % 4 == 3 ? small : big;
		dst->nodes[i].vram_size = small;
	}
	/* destination: only nodes 2, 4 and 7 (all on CPU 0) fit the large partitions */
	dst->nodes[2].vram_size = dst->nodes[4].vram_size = dst->nodes[7].vram_size = big;
	req.src_nodes = src_nodes;
	req.n_src_nodes = 4;
	expect_compatible(&req, &res);
	for (size_t i = 0; i < 4; i++) {
		uint32_t d = res.map[i].dst_node;

		assert_true(dst->nodes[d].vram_size >= src->nodes[res.map[i].src_node].vram_size);
	}
	assert_int_equal(synth_dst_of(&res, 2), 2);
	assert_int_equal(synth_dst_of(&res, 3), 4);
	assert_int_equal(synth_dst_of(&res, 4), 7);
	/* the small one stays on the first physical GPU with its peers */
	assert_in_range(synth_dst_of(&res, 5), 3, 5);
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

/* ---- preferences ------------------------------------------------------------ */

/* Partitions of one physical GPU land on one physical GPU, even past a lower index. */
static void test_partitions_stay_together(void **state)
{
	struct kfd_topology *src = synth_partitions(4, 4, 100), *dst = synth_partitions(4, 4, 500);
	uint32_t src_nodes[] = {6, 7, 8, 9};
	struct match_request req = synth_request(src, dst);
	struct match_result res;

	(void)state;
	/* destination GPU 0 lost one partition to another job: 3 free partitions only */
	dst->nodes[3].accessible = false;
	req.src_nodes = src_nodes;
	req.n_src_nodes = 4;
	expect_compatible(&req, &res);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(dst->nodes[res.map[i].dst_node].props.unique_id,
				 dst->nodes[res.map[0].dst_node].props.unique_id);
	assert_int_equal(synth_dst_of(&res, 6), 6);
	assert_int_equal(res.map[0].dst_render_minor, 136);
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

/* Link weights count: a weight-15 pair goes to a weight-15 pair, not to the lowest nodes. */
static void test_weight_preference(void **state)
{
	struct kfd_topology *src = synth_two_hives(1000), *dst = synth_two_hives(2000);
	uint32_t src_nodes[] = {2, 3};
	struct match_request req = synth_request(src, dst);
	struct match_result res;

	(void)state;
	/* destination hive A is a ring: 2-4 and 3-5 are two hops (weight 30) */
	for (size_t i = 0; i < dst->nodes[2].n_io_links; i++)
		if (dst->nodes[2].io_links[i].node_to == 3)
			dst->nodes[2].io_links[i].weight = 30;
	for (size_t i = 0; i < dst->nodes[3].n_io_links; i++)
		if (dst->nodes[3].io_links[i].node_to == 2)
			dst->nodes[3].io_links[i].weight = 30;
	req.src_nodes = src_nodes;
	req.n_src_nodes = 2;
	expect_compatible(&req, &res);
	assert_int_equal(synth_dst_of(&res, 2), 2);
	assert_int_equal(synth_dst_of(&res, 3), 4);
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

/* Where weights say nothing, partitions still stay on one physical GPU. */
static void test_physical_gpu_penalty(void **state)
{
	struct kfd_topology *src = synth_partitions(2, 4, 100), *dst = synth_partitions(2, 4, 200);
	uint32_t src_nodes[] = {2, 3};
	struct match_request req = synth_request(src, dst);
	struct match_result res;

	(void)state;
	/* one flat weight for every partition pair on both sides */
	for (uint32_t n = 2; n < 10; n++) {
		for (size_t i = 0; i < src->nodes[n].n_io_links; i++)
			if (src->nodes[n].io_links[i].type == KFD_IOLINK_XGMI)
				src->nodes[n].io_links[i].weight = 15;
		for (size_t i = 0; i < dst->nodes[n].n_io_links; i++)
			if (dst->nodes[n].io_links[i].type == KFD_IOLINK_XGMI)
				dst->nodes[n].io_links[i].weight = 15;
	}
	/* node 3 is the cheapest by index, but sits on another physical GPU than 2 */
	SYNTH_SET(&dst->nodes[3], unique_id, 0x7777);
	req.src_nodes = src_nodes;
	req.n_src_nodes = 2;
	expect_compatible(&req, &res);
	assert_int_equal(synth_dst_of(&res, 2), 2);
	assert_int_equal(synth_dst_of(&res, 3), 4);
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

/* GPUs of one hive without a direct link (p2p only) still prefer one hive. */
static void test_hive_penalty(void **state)
{
	struct kfd_topology *src = synth_two_hives(1000), *dst = synth_two_hives(2000);
	uint32_t src_nodes[] = {2, 3};
	struct match_request req = synth_request(src, dst);
	struct match_result res;

	(void)state;
	/* the source pair lost its xGMI link; its p2p path has the cross-hive weight */
	src->nodes[2].n_io_links = 1;
	src->nodes[3].n_io_links = 1;
	synth_p2p(src, 2, 3, KFD_IOLINK_PCIEXPRESS, 72);
	synth_p2p(src, 3, 2, KFD_IOLINK_PCIEXPRESS, 72);
	/* destination: node 2 alone on CPU 0 with hive A, its hive peers are on other CPUs */
	for (uint32_t n = 3; n < 6; n++)
		dst->nodes[n].io_links[0].node_to = 1;
	dst->nodes[6].io_links[0].node_to = 0;
	req.src_nodes = src_nodes;
	req.n_src_nodes = 2;
	req.checks.numa = false;
	/* without a hive, node 6 would win: cross-hive weight 72 like the source, same CPU */
	expect_compatible(&req, &res);
	assert_int_equal(synth_dst_of(&res, 2), 2);
	assert_in_range(synth_dst_of(&res, 3), 3, 5);
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

/* With no identity, NUMA affinity decides between equal-weight choices. */
static void test_numa_preference(void **state)
{
	struct kfd_topology *src = synth_two_hives(1000), *dst = synth_two_hives(2000);
	uint32_t src_nodes[] = {8, 9};
	struct match_request req = synth_request(src, dst);
	struct match_result res;

	(void)state;
	req.src_nodes = src_nodes;
	req.n_src_nodes = 2;
	expect_compatible(&req, &res);
	assert_in_range(synth_dst_of(&res, 8), 6, 9);
	assert_in_range(synth_dst_of(&res, 9), 6, 9);
	assert_int_equal(synth_dst_of(&res, 8), 6);
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

/* Identity comes first, even when it splits a physical GPU. */
static void test_identity_first(void **state)
{
	struct kfd_topology *src = synth_partitions(4, 4, 100), *dst = synth_partitions(4, 4, 100);
	uint32_t src_nodes[] = {2, 3};
	struct match_request req = synth_request(src, dst);
	struct match_result res;

	(void)state;
	/* the rest of physical GPU 0 is taken: keeping node 2 splits the pair */
	for (uint32_t i = 3; i < 6; i++)
		dst->nodes[i].accessible = false;
	req.src_nodes = src_nodes;
	req.n_src_nodes = 2;
	expect_compatible(&req, &res);
	assert_int_equal(synth_dst_of(&res, 2), 2);
	assert_int_equal(synth_dst_of(&res, 3), 6);
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

/* ---- input errors ---------------------------------------------------------- */

static void test_invalid_input(void **state)
{
	struct kfd_topology *src = synth_two_hives(1000), *dst = synth_two_hives(2000);
	uint32_t bad_nodes[] = {2, 42}, cpu_nodes[] = {0}, twice[] = {2, 2};
	struct match_request req = synth_request(src, dst);
	struct match_result res;

	(void)state;
	req.src_nodes = bad_nodes;
	req.n_src_nodes = 2;
	assert_int_equal(topo_match(&req, &res), -ENOENT);
	assert_contains(res.reason, "source node 42 does not exist");
	assert_false(res.compatible);
	match_result_free(&res);

	req.src_nodes = cpu_nodes;
	req.n_src_nodes = 1;
	assert_int_equal(topo_match(&req, &res), -EINVAL);
	assert_contains(res.reason, "source node 0 is not a GPU");
	match_result_free(&res);

	req.src_nodes = twice;
	req.n_src_nodes = 2;
	assert_int_equal(topo_match(&req, &res), -EINVAL);
	assert_contains(res.reason, "source node 2 is listed twice");
	match_result_free(&res);

	req.src_nodes = NULL;
	req.dst_nodes = bad_nodes;
	req.n_dst_nodes = 2;
	assert_int_equal(topo_match(&req, &res), -ENOENT);
	assert_contains(res.reason, "destination node 42 does not exist");
	match_result_free(&res);

	/* the default destination set skips what cannot be used; a listed one is an error */
	dst->nodes[9].accessible = false;
	dst->nodes[8].gpu_id = 0;
	req.dst_nodes = NULL;
	expect_incompatible(&req, &res);
	assert_contains(res.reason, "checkpoint has 8 GPUs, only 6 destination GPUs are usable");
	assert_contains(res.reason, "; not usable: GPU node 9 (cannot be read: not in the device "
				    "cgroup?), GPU node 8 (no gpu_id: gpu_id file missing or 0)");
	match_result_free(&res);
	bad_nodes[1] = 9;
	req.dst_nodes = bad_nodes;
	assert_int_equal(topo_match(&req, &res), -EACCES);
	assert_string_equal(res.reason, "destination GPU node 9 is not usable (cannot be read: not "
					"in the device cgroup?)");
	match_result_free(&res);
	bad_nodes[1] = 8;
	assert_int_equal(topo_match(&req, &res), -EINVAL);
	assert_string_equal(res.reason, "destination GPU node 8 is not usable (no gpu_id: gpu_id "
					"file missing or 0)");
	match_result_free(&res);
	req.dst_nodes = NULL;

	src->nodes[4].gpu_id = 0;
	assert_int_equal(topo_match(&req, &res), -EINVAL);
	assert_contains(res.reason, "source GPU node 4 is not usable (no gpu_id: gpu_id file "
				    "missing or 0)");
	match_result_free(&res);

	src->nodes[4].gpu_id = 1005;
	assert_int_equal(topo_match(&req, &res), -EINVAL);
	assert_contains(res.reason, "source GPU nodes 4 and 5 have the same gpu_id 1005");
	match_result_free(&res);
	src->nodes[4].gpu_id = 1004;

	src->nodes[7].accessible = false;
	assert_int_equal(topo_match(&req, &res), -EACCES);
	assert_contains(res.reason, "source GPU node 7 is not usable (cannot be read");
	match_result_free(&res);

	req.src = NULL;
	assert_int_equal(topo_match(&req, &res), -EINVAL);
	assert_contains(res.reason, "no source topology");
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

/* An empty checkpoint maps trivially; the default destination set skips CPUs. */
static void test_empty_source(void **state)
{
	struct kfd_topology *src = synth_new(1), *dst = synth_two_hives(1000);
	struct match_request req = synth_request(src, dst);
	struct match_result res;

	(void)state;
	synth_cpu(src, 0);
	expect_compatible(&req, &res);
	assert_int_equal(res.n_map, 0);
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

/* A reason longer than the buffer is cut with "..." and stays one line. */
static void test_long_reason_truncated(void **state)
{
	struct kfd_topology *src = synth_partitions(20, 8, 1000),
			    *dst = synth_partitions(20, 8, 5000);
	struct match_request req = synth_request(src, dst);
	struct match_result res;

	(void)state;
	dst->nodes[2].accessible = false;
	expect_incompatible(&req, &res);
	assert_contains(res.reason,
			"checkpoint has 160 GPUs, only 159 destination GPUs are usable");
	assert_int_equal(strlen(res.reason), sizeof(res.reason) - 1);
	assert_string_equal(res.reason + sizeof(res.reason) - 4, "...");
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

/* ---- determinism and speed -------------------------------------------------- */

/*
 * Speed as work done, not as a clock (a busy machine is slow, the search
 * is not): no backtracking through permutations, i.e. the first solution
 * after at most two assignments per source (one each, here), then at most
 * the improvement budget. The time is printed.
 */
static void assert_search_did_not_backtrack(const struct match_result *res)
{
	if (res->search_steps > 2 * res->n_map + IMPROVE_STEPS)
		fail_msg("%llu search steps for %zu sources: more than two per source plus the "
			 "improvement budget (%d)",
			 (unsigned long long)res->search_steps, res->n_map, IMPROVE_STEPS);
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static void test_deterministic(void **state)
{
	struct kfd_topology *src = synth_partitions(8, 8, 100), *dst = synth_partitions(8, 8, 1000);
	uint32_t src_nodes[] = {9, 2, 30, 31, 50, 17, 40, 41, 42};
	struct match_request req = synth_request(src, dst);
	struct match_result a, b;

	(void)state;
	dst->nodes[5].accessible = false;
	dst->nodes[33].accessible = false;
	req.src_nodes = src_nodes;
	req.n_src_nodes = sizeof(src_nodes) / sizeof(src_nodes[0]);
	expect_compatible(&req, &a);
	expect_compatible(&req, &b);
	assert_int_equal(a.n_map, b.n_map);
	assert_memory_equal(a.map, b.map, a.n_map * sizeof(*a.map));
	assert_int_equal(a.search_steps, b.search_steps);
	match_result_free(&a);
	match_result_free(&b);
	synth_free(src);
	synth_free(dst);
}

/*
 * The sockets must swap: 32 sources of CPU 1 only fit the 32 free
 * destinations of CPU 0. Choosing a CPU per group before placing GPUs keeps
 * this from backtracking through permutations of the first group.
 */
static void test_numa_groups_swap_sockets(void **state)
{
	struct kfd_topology *src = synth_partitions(8, 8, 100), *dst = synth_partitions(8, 8, 1000);
	static const uint32_t src_holes[] = {2, 11, 20, 29}, dst_holes[] = {40, 49, 58, 65};
	uint32_t src_nodes[64];
	struct match_request req = synth_request(src, dst);
	struct match_result res;
	struct timespec t0;
	size_t n = 0;
	double s;

	(void)state;
	for (uint32_t i = 2; i < 66; i++)
		if (i != src_holes[0] && i != src_holes[1] && i != src_holes[2] &&
		    i != src_holes[3])
			src_nodes[n++] = i;
	for (size_t k = 0; k < 4; k++)
		dst->nodes[dst_holes[k]].accessible = false;
	req.src_nodes = src_nodes;
	req.n_src_nodes = n;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	expect_compatible(&req, &res);
	s = seconds_since(&t0);
	print_message("# 60 partitions, sockets swapped: %.3f ms, %llu steps\n", s * 1e3,
		      (unsigned long long)res.search_steps);
	assert_search_did_not_backtrack(&res);
	for (size_t i = 0; i < res.n_map; i++)
		assert_int_equal(res.map[i].src_node < 34, res.map[i].dst_node >= 34);
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

static void test_speed_64_partitions(void **state)
{
	struct kfd_topology *src = synth_partitions(8, 8, 100), *dst = synth_partitions(8, 8, 1000);
	struct match_request req = synth_request(src, dst);
	struct match_result res;
	struct timespec t0;
	double s;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	expect_compatible(&req, &res);
	s = seconds_since(&t0);
	print_message("# synthetic 64 partitions, no identity: %.3f ms, %llu steps\n", s * 1e3,
		      (unsigned long long)res.search_steps);
	assert_search_did_not_backtrack(&res);
	for (size_t i = 0; i < res.n_map; i++)
		assert_int_equal(res.map[i].dst_node, res.map[i].src_node);
	match_result_free(&res);
	synth_free(src);
	synth_free(dst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_checks_default_all_on, reset_env),
		cmocka_unit_test_setup(test_checks_env_values, reset_env),
		cmocka_unit_test_setup(test_checks_env_invalid, reset_env),
		cmocka_unit_test_setup(test_compat_identical, reset_env),
		cmocka_unit_test_setup(test_compat_equal_rules, reset_env),
		cmocka_unit_test_setup(test_compat_at_least_rules, reset_env),
		cmocka_unit_test_setup(test_compat_vram, reset_env),
		cmocka_unit_test_setup(test_compat_switches, reset_env),
		cmocka_unit_test_setup(test_compat_absent_keys_and_link_counts, reset_env),
		cmocka_unit_test_setup(test_identity_two_hives, reset_env),
		cmocka_unit_test_setup(test_identity_needs_node_and_gpu_id, reset_env),
		cmocka_unit_test_setup(test_hive_move, reset_env),
		cmocka_unit_test_setup(test_xgmi_pair_cannot_split_hives, reset_env),
		cmocka_unit_test_setup(test_unlinked_onto_xgmi, reset_env),
		cmocka_unit_test_setup(test_cpu_link_not_weaker, reset_env),
		cmocka_unit_test_setup(test_large_bar_kept, reset_env),
		cmocka_unit_test_setup(test_numa_shared_cpu, reset_env),
		cmocka_unit_test_setup(test_numa_group_does_not_fit, reset_env),
		cmocka_unit_test_setup(test_numa_groups_conflict, reset_env),
		cmocka_unit_test_setup(test_too_few_destinations, reset_env),
		cmocka_unit_test_setup(test_too_few_names_skipped, reset_env),
		cmocka_unit_test_setup(test_no_compatible_destination_reason, reset_env),
		cmocka_unit_test_setup(test_hall_conflict, reset_env),
		cmocka_unit_test_setup(test_vram_greedy_trap, reset_env),
		cmocka_unit_test_setup(test_partitions_stay_together, reset_env),
		cmocka_unit_test_setup(test_numa_preference, reset_env),
		cmocka_unit_test_setup(test_weight_preference, reset_env),
		cmocka_unit_test_setup(test_physical_gpu_penalty, reset_env),
		cmocka_unit_test_setup(test_hive_penalty, reset_env),
		cmocka_unit_test_setup(test_identity_first, reset_env),
		cmocka_unit_test_setup(test_invalid_input, reset_env),
		cmocka_unit_test_setup(test_empty_source, reset_env),
		cmocka_unit_test_setup(test_long_reason_truncated, reset_env),
		cmocka_unit_test_setup(test_deterministic, reset_env),
		cmocka_unit_test_setup(test_numa_groups_swap_sockets, reset_env),
		cmocka_unit_test_setup(test_speed_64_partitions, reset_env),
	};

	unset_env();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
