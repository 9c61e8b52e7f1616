// SPDX-License-Identifier: MIT
/*
 * Matcher scenarios on the real captures in $KFD_FIXTURES (default
 * tests/fixtures/kfd-topologies), derived from docs/kfd-topology-facts.md.
 * Captures without gpu_id files, and variants of a capture (other gpu_ids,
 * less VRAM, older firmware ...), are made in temporary copies; the fixtures
 * themselves are never touched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checks_env.h"
#include "topology/match.h"
#include "topology/match_int.h" /* IMPROVE_STEPS */
#include "tests/unit/fixtures.h"

/* MI308X: the large partitions' VRAM, and the last partition's of each GPU */
#define MI308X_VRAM	  51539607552ULL
#define MI308X_VRAM_SMALL 51522830336ULL

#define assert_contains(s, sub)                                                                    \
	do {                                                                                       \
		if (!strstr((s), (sub)))                                                           \
			fail_msg("\"%s\" does not contain \"%s\"", (s), (sub));                    \
	} while (0)

/* ---- helpers: fixture copies ----------------------------------------------- */

/* A topology tree and, for temporary copies, the directory to remove. */
struct tree {
	char root[PATH_MAX];
	bool is_copy;
	struct kfd_topology topo;
	bool loaded;
};

static void run(const char *cmd)
{
	int ret = system(cmd);

	if (ret)
		fail_msg("'%s' failed (%d)", cmd, ret);
}

static void tree_load(struct tree *t)
{
	char err[512] = "";
	int ret;

	if (t->loaded)
		topo_free(&t->topo);
	t->loaded = false;
	ret = topo_load(t->root, &t->topo, err, sizeof(err));
	if (ret)
		fail_msg("topo_load(%s) = %d: %s", t->root, ret, err);
	t->loaded = true;
}

static void tree_open(struct tree *t, const char *name)
{
	memset(t, 0, sizeof(*t));
	fmt(t->root, sizeof(t->root), "%s/%s", fixtures_dir(), name);
	if (access(t->root, R_OK))
		fail_msg("fixture %s not readable (set KFD_FIXTURES)", t->root);
	tree_load(t);
}

static void write_file(const char *dir, const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	fmt(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "w");
	if (!f)
		fail_msg("cannot write %s", path);
	fputs(text, f);
	fclose(f);
}

/*
 * Copy of a fixture; when id_base is nonzero, every GPU node N gets gpu_id
 * id_base + N (a capture without gpu_id files cannot be matched, and a
 * different id set means "another host": no identity).
 */
static void tree_copy(struct tree *t, const char *name, uint32_t id_base)
{
	char cmd[3 * PATH_MAX], src[PATH_MAX];
	struct kfd_topology orig;
	char err[512];

	memset(t, 0, sizeof(*t));
	fmt(src, sizeof(src), "%s/%s", fixtures_dir(), name);
	fmt(t->root, sizeof(t->root), "%s/match-XXXXXX",
	    getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(t->root))
		fail_msg("mkdtemp failed");
	t->is_copy = true;
	fmt(cmd, sizeof(cmd), "cp -R '%s/.' '%s'", src, t->root);
	run(cmd);
	if (id_base) {
		if (topo_load(t->root, &orig, err, sizeof(err)))
			fail_msg("topo_load(%s): %s", t->root, err);
		for (size_t i = 0; i < orig.n_nodes; i++) {
			char rel[64], text[32];

			if (!orig.nodes[i].is_gpu)
				continue;
			fmt(rel, sizeof(rel), "nodes/%zu/gpu_id", i);
			fmt(text, sizeof(text), "%u\n", id_base + (uint32_t)i);
			write_file(t->root, rel, text);
		}
		topo_free(&orig);
	}
	tree_load(t);
}

static void tree_close(struct tree *t)
{
	char cmd[PATH_MAX + 32];

	if (t->loaded)
		topo_free(&t->topo);
	t->loaded = false;
	if (t->is_copy) {
		t->is_copy = false;
		fmt(cmd, sizeof(cmd), "rm -rf '%s'", t->root);
		run(cmd);
	}
}

/* Sets "key value" in a key/value file of a copy (appends the key if absent); reloads. */
static void tree_set(struct tree *t, const char *rel, const char *key, uint64_t value)
{
	char path[PATH_MAX], line[256], *out = NULL;
	size_t out_len = 0, key_len = strlen(key);
	bool found = false;
	FILE *in, *mem;

	assert_true(t->is_copy);
	fmt(path, sizeof(path), "%s/%s", t->root, rel);
	in = fopen(path, "r");
	if (!in)
		fail_msg("cannot read %s", path);
	mem = open_memstream(&out, &out_len);
	assert_non_null(mem);
	while (fgets(line, sizeof(line), in)) {
		if (!strncmp(line, key, key_len) && line[key_len] == ' ') {
			fprintf(mem, "%s %llu\n", key, (unsigned long long)value);
			found = true;
		} else {
			fputs(line, mem);
		}
	}
	if (!found)
		fprintf(mem, "%s %llu\n", key, (unsigned long long)value);
	fclose(in);
	fclose(mem);
	write_file(t->root, rel, out);
	free(out);
	tree_load(t);
}

static void set_node_prop(struct tree *t, uint32_t node, const char *key, uint64_t value)
{
	char rel[64];

	fmt(rel, sizeof(rel), "nodes/%u/properties", node);
	tree_set(t, rel, key, value);
}

static void set_node_vram(struct tree *t, uint32_t node, uint64_t bytes)
{
	char rel[64];

	fmt(rel, sizeof(rel), "nodes/%u/mem_banks/0/properties", node);
	tree_set(t, rel, "size_in_bytes", bytes);
}

/* ---- helpers: matching -------------------------------------------------------- */

static struct match_request request(const struct tree *src, const uint32_t *src_nodes, size_t n_src,
				    const struct tree *dst, const uint32_t *dst_nodes, size_t n_dst)
{
	struct match_request req = {
		.src = &src->topo,
		.src_nodes = src_nodes,
		.n_src_nodes = n_src,
		.dst = &dst->topo,
		.dst_nodes = dst_nodes,
		.n_dst_nodes = n_dst,
	};
	char err[256];

	if (checks_read(&req.checks, err, sizeof(err)))
		fail_msg("%s", err);
	return req;
}

static void expect_compatible(const struct match_request *req, struct match_result *res)
{
	int ret = topo_match(req, res);

	if (ret)
		fail_msg("topo_match returned %d: %s", ret, res->reason);
	if (!res->compatible)
		fail_msg("expected a mapping, got: %s", res->reason);
}

static void expect_incompatible(const struct match_request *req, struct match_result *res)
{
	int ret = topo_match(req, res);

	if (ret)
		fail_msg("topo_match returned %d: %s", ret, res->reason);
	if (res->compatible)
		fail_msg("expected no mapping, got one");
	assert_null(strchr(res->reason, '\n'));
}

static const struct kfd_node *dst_node(const struct match_request *req, const struct match_pair *p)
{
	return topo_node(req->dst, p->dst_node);
}

static int dst_of(const struct match_result *res, uint32_t src_node)
{
	for (size_t i = 0; i < res->n_map; i++)
		if (res->map[i].src_node == src_node)
			return (int)res->map[i].dst_node;
	return -1;
}

static bool xgmi_linked(const struct kfd_topology *t, uint32_t a, uint32_t b)
{
	const struct kfd_link *l = topo_io_link(topo_node(t, a), b);

	return l && l->type == KFD_IOLINK_XGMI;
}

/* Every pair of sources sharing a physical GPU (unique_id) lands on one, and only those. */
static void assert_physical_gpus_kept(const struct match_request *req,
				      const struct match_result *res)
{
	for (size_t a = 0; a < res->n_map; a++) {
		for (size_t b = a + 1; b < res->n_map; b++) {
			const struct kfd_node *sa = topo_node(req->src, res->map[a].src_node);
			const struct kfd_node *sb = topo_node(req->src, res->map[b].src_node);
			const struct kfd_node *da = dst_node(req, &res->map[a]);
			const struct kfd_node *db = dst_node(req, &res->map[b]);

			assert_int_equal(sa->props.unique_id == sb->props.unique_id,
					 da->props.unique_id == db->props.unique_id);
		}
	}
}

static void assert_identity(const struct match_result *res)
{
	for (size_t i = 0; i < res->n_map; i++) {
		assert_int_equal(res->map[i].dst_node, res->map[i].src_node);
		assert_int_equal(res->map[i].dst_gpu_id, res->map[i].src_gpu_id);
		assert_int_equal(res->map[i].dst_render_minor, res->map[i].src_render_minor);
	}
}

static size_t count_gpus(const struct kfd_topology *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n_nodes; i++)
		n += t->nodes[i].is_gpu;
	return n;
}

static int reset_env(void **state)
{
	static const char *const vars[] = {
		"KFD_CAPABILITY_CHECK",	  "KFD_VRAM_SIZE_CHECK", "KFD_NUM_GWS_CHECK",
		"KFD_CACHES_COUNT_CHECK", "KFD_FW_VER_CHECK",	 "KFD_SDMA_FW_VER_CHECK",
		"KFD_NUMA_CHECK",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	return 0;
}

/*
 * Each test keeps its trees in slots of the test state, so teardown removes
 * the temporary copies even when an assertion ends the test early.
 */
#define N_SLOTS 2

static struct tree *tree_slot(void **state, size_t k)
{
	assert_true(k < N_SLOTS);
	return (struct tree *)*state + k;
}

static int trees_setup(void **state)
{
	reset_env(NULL);
	*state = calloc(N_SLOTS, sizeof(struct tree));
	return *state ? 0 : -1;
}

static int trees_teardown(void **state)
{
	struct tree *trees = *state;

	for (size_t k = 0; k < N_SLOTS; k++)
		tree_close(&trees[k]);
	free(trees);
	return 0;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* ---- identity ------------------------------------------------------------------ */

/* Every capture restores onto itself with the same nodes and gpu_ids. */
static void test_identity_every_capture(void **state)
{
	static const struct {
		const char *name;
		bool needs_ids;
	} captures[] = {
		{VEGA10, false}, {MI308X, false}, {MI210, true},
		{MI300X, true},	 {MI300A, true},  {WORKSTN, true},
	};
	(void)state;
	for (size_t k = 0; k < sizeof(captures) / sizeof(captures[0]); k++) {
		struct tree *t = tree_slot(state, 0);
		struct match_request req;
		struct match_result res;

		if (captures[k].needs_ids)
			tree_copy(t, captures[k].name, 40000);
		else
			tree_open(t, captures[k].name);
		req = request(t, NULL, 0, t, NULL, 0);
		expect_compatible(&req, &res);
		assert_int_equal(res.n_map, count_gpus(&t->topo));
		assert_true(res.n_map > 0);
		assert_identity(&res);
		match_result_free(&res);
		tree_close(t);
	}
}

/* A capture without gpu_id files is not a usable source. */
static void test_source_without_gpu_id(void **state)
{
	struct tree *t = tree_slot(state, 0);
	struct match_request req;
	struct match_result res;

	(void)state;
	tree_open(t, MI210);
	req = request(t, NULL, 0, t, NULL, 0);
	assert_int_equal(topo_match(&req, &res), -EINVAL);
	assert_contains(res.reason, "source GPU node 2 is not usable (no gpu_id");
	match_result_free(&res);
	tree_close(t);
}

/* ---- MI210: two hives ----------------------------------------------------------- */

static void test_mi210_job_moves_to_other_hive(void **state)
{
	static const uint32_t hive_a[] = {2, 3, 4, 5}, hive_b[] = {6, 7, 8, 9};
	struct tree *t = tree_slot(state, 0);
	struct match_request req;
	struct match_result res;

	(void)state;
	tree_copy(t, MI210, 100);
	req = request(t, hive_a, 4, t, hive_b, 4);
	expect_compatible(&req, &res);
	for (size_t a = 0; a < 4; a++) {
		assert_int_equal(res.map[a].src_node, hive_a[a]);
		assert_in_range(res.map[a].dst_node, 6, 9);
		assert_int_equal(res.map[a].dst_render_minor, 128 + res.map[a].dst_node - 2);
		for (size_t b = 0; b < 4; b++)
			if (a != b)
				assert_true(xgmi_linked(&t->topo, res.map[a].dst_node,
							res.map[b].dst_node));
	}
	match_result_free(&res);
	tree_close(t);
}

static void test_mi210_pair_keeps_xgmi(void **state)
{
	static const uint32_t pair[] = {3, 5}, others[] = {4, 6, 8, 9};
	struct tree *t = tree_slot(state, 0);
	struct match_request req;
	struct match_result res;

	(void)state;
	tree_copy(t, MI210, 100);
	/* node 4 is in hive A, but its partner would have to cross hives: both go to hive B */
	req = request(t, pair, 2, t, others, 4);
	expect_compatible(&req, &res);
	assert_in_range(res.map[0].dst_node, 6, 9);
	assert_in_range(res.map[1].dst_node, 6, 9);
	assert_true(xgmi_linked(&t->topo, res.map[0].dst_node, res.map[1].dst_node));
	match_result_free(&res);
	tree_close(t);
}

static void test_mi210_pair_cannot_span_hives(void **state)
{
	static const uint32_t pair[] = {2, 3}, split[] = {5, 6};
	struct tree *t = tree_slot(state, 0);
	struct match_request req;
	struct match_result res;

	(void)state;
	tree_copy(t, MI210, 100);
	setenv("KFD_NUMA_CHECK", "0", 1); /* nodes 5 and 6 also sit on different sockets */
	req = request(t, pair, 2, t, split, 2);
	expect_incompatible(&req, &res);
	assert_string_equal(res.reason,
			    "source GPUs node 2 (gpu_id 102) and node 3 (gpu_id 103) are linked "
			    "by xGMI (type 11, weight 15); no destination pair among their "
			    "candidates keeps that link: best tried node 5 (gpu_id 105) and node "
			    "6 (gpu_id 106) linked by none");
	match_result_free(&res);
	tree_close(t);
}

/* Another host with the same layout: no identity, the job stays on its socket's hive. */
static void test_mi210_other_host(void **state)
{
	static const uint32_t job[] = {7, 9};
	struct tree *src = tree_slot(state, 0), *dst = tree_slot(state, 1);
	struct match_request req;
	struct match_result res;

	(void)state;
	tree_copy(src, MI210, 100);
	tree_copy(dst, MI210, 300);
	req = request(src, job, 2, dst, NULL, 0);
	expect_compatible(&req, &res);
	assert_int_equal(res.map[0].dst_node, 6);
	assert_int_equal(res.map[1].dst_node, 7);
	assert_int_equal(res.map[0].dst_gpu_id, 306);
	match_result_free(&res);
	tree_close(src);
	tree_close(dst);
}

/* ---- MI308X: partitions, domains, render minors ----------------------------------- */

static void test_mi308x_partitions_move_across_domains(void **state)
{
	static const uint32_t gpu0[] = {2, 3, 4, 5};
	uint32_t domain1[16];
	struct tree *t = tree_slot(state, 0);
	struct match_request req;
	struct match_result res;

	(void)state;
	for (uint32_t i = 0; i < 16; i++)
		domain1[i] = 33 - i; /* a set: its order must not matter */
	tree_open(t, MI308X);
	req = request(t, gpu0, 4, t, domain1, 16);
	expect_compatible(&req, &res);
	assert_physical_gpus_kept(&req, &res);
	for (size_t i = 0; i < 4; i++) {
		const struct kfd_node *d = dst_node(&req, &res.map[i]);

		assert_int_equal(d->props.domain, 1);
		assert_true(d->vram_size >= topo_node(&t->topo, gpu0[i])->vram_size);
	}
	/* lowest physical GPU of domain 1, partitions in order */
	assert_int_equal(dst_of(&res, 2), 18);
	assert_int_equal(dst_of(&res, 5), 21);
	assert_int_equal(res.map[0].dst_gpu_id, 23332);
	match_result_free(&res);
	tree_close(t);
}

static void test_mi308x_sparse_render_minors(void **state)
{
	static const uint32_t gpu0[] = {2, 3, 4, 5}, gpu1[] = {6, 7, 8, 9};
	struct tree *t = tree_slot(state, 0);
	struct match_request req;
	struct match_result res;

	(void)state;
	tree_open(t, MI308X);
	req = request(t, gpu0, 4, t, gpu1, 4);
	expect_compatible(&req, &res);
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(res.map[i].src_render_minor, 128 + i);
		assert_int_equal(res.map[i].dst_node, 6 + i);
		assert_int_equal(res.map[i].dst_render_minor, 136 + i);
	}
	assert_int_equal(res.map[0].dst_gpu_id, 22879);
	match_result_free(&res);
	tree_close(t);
}

static void test_mi308x_too_few_destinations(void **state)
{
	static const uint32_t gpu0[] = {2, 3, 4, 5}, two[] = {6, 7};
	struct tree *t = tree_slot(state, 0);
	struct match_request req;
	struct match_result res;

	(void)state;
	tree_open(t, MI308X);
	req = request(t, gpu0, 4, t, two, 2);
	expect_incompatible(&req, &res);
	assert_string_equal(res.reason,
			    "checkpoint has 4 GPUs, only 2 destination GPUs are usable: "
			    "node 6 (gpu_id 22879), node 7 (gpu_id 42334)");
	match_result_free(&res);
	tree_close(t);
}

/*
 * The last partition of every MI308X has slightly less VRAM. On a copy where
 * node 3 shrinks too, the large source partitions need the destinations
 * that still fit; the small one (node 5), listed first, must not take one.
 */
static void test_mi308x_slightly_smaller_vram(void **state)
{
	static const uint32_t job[] = {5, 2, 3, 4}, avail[] = {2, 3, 4, 5, 6};
	struct tree *src = tree_slot(state, 0), *dst = tree_slot(state, 1);
	struct match_request req;
	struct match_result res;

	(void)state;
	tree_open(src, MI308X);
	tree_copy(dst, MI308X, 0);
	set_node_vram(dst, 3, MI308X_VRAM_SMALL);
	assert_int_equal(topo_node(&src->topo, 3)->vram_size, MI308X_VRAM);
	req = request(src, job, 4, dst, avail, 5);
	expect_compatible(&req, &res);
	assert_int_equal(dst_of(&res, 2), 2);
	assert_int_equal(dst_of(&res, 3), 6);
	assert_int_equal(dst_of(&res, 4), 4);
	assert_int_equal(dst_of(&res, 5), 5);
	match_result_free(&res);

	/* three large partitions, only two large destinations left */
	set_node_vram(dst, 6, MI308X_VRAM_SMALL);
	req = request(src, job, 4, dst, avail, 5);
	expect_incompatible(&req, &res);
	assert_contains(res.reason,
			"3 source GPUs compete for 2 compatible destination GPUs (source "
			"node 2 (gpu_id 24248) cannot use node 3 (gpu_id 41657): "
			"vram_size: source 51539607552, destination 51522830336 "
			"(destination must be >=)): sources node 2 (gpu_id 24248), node 3 "
			"(gpu_id 41657), node 4 (gpu_id 59065); destinations node 2 "
			"(gpu_id 24248), node 4 (gpu_id 59065)");
	match_result_free(&res);

	setenv("KFD_VRAM_SIZE_CHECK", "0", 1);
	req = request(src, job, 4, dst, avail, 5);
	expect_compatible(&req, &res);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(res.map[i].dst_node, res.map[i].src_node);
	match_result_free(&res);
	tree_close(src);
	tree_close(dst);
}

/* The whole box onto another host, with several partitions a little smaller. */
static void test_mi308x_other_host_smaller_partitions(void **state)
{
	static const uint32_t shrink[] = {2, 7, 12, 18, 27, 30};
	struct tree *src = tree_slot(state, 0), *dst = tree_slot(state, 1);
	struct match_request req;
	struct match_result res;
	size_t big_src = 0;

	(void)state;
	tree_open(src, MI308X);
	tree_copy(dst, MI308X, 1000);
	/* every physical GPU keeps 3 large partitions: shrink one large one per GPU ... */
	for (size_t i = 0; i < sizeof(shrink) / sizeof(shrink[0]); i++)
		set_node_vram(dst, shrink[i], MI308X_VRAM_SMALL);
	/* ... and grow the small one of those GPUs */
	for (size_t i = 0; i < sizeof(shrink) / sizeof(shrink[0]); i++)
		set_node_vram(dst, 2 + (shrink[i] - 2) / 4 * 4 + 3, MI308X_VRAM);
	req = request(src, NULL, 0, dst, NULL, 0);
	expect_compatible(&req, &res);
	assert_int_equal(res.n_map, 32);
	for (size_t i = 0; i < res.n_map; i++) {
		const struct kfd_node *s = topo_node(&src->topo, res.map[i].src_node);

		big_src += s->vram_size == MI308X_VRAM;
		assert_true(dst_node(&req, &res.map[i])->vram_size >= s->vram_size);
		assert_int_equal(dst_node(&req, &res.map[i])->props.domain, s->props.domain);
	}
	assert_int_equal(big_src, 24);
	assert_physical_gpus_kept(&req, &res);
	print_message("# MI308X 32 partitions onto a host with reshuffled VRAM: %llu steps\n",
		      (unsigned long long)res.search_steps);
	match_result_free(&res);
	tree_close(src);
	tree_close(dst);
}

/* ---- heterogeneous and foreign nodes ------------------------------------------------ */

static void test_workstation_radeon_vii_not_on_navi23(void **state)
{
	static const uint32_t vii[] = {1}, navi23[] = {3}, mi300x_spx[] = {4};
	static const uint32_t mi350x[] = {5};
	struct tree *t = tree_slot(state, 0);
	struct match_request req;
	struct match_result res;

	(void)state;
	tree_copy(t, WORKSTN, 700);
	req = request(t, vii, 1, t, navi23, 1);
	expect_incompatible(&req, &res);
	assert_string_equal(res.reason,
			    "source GPU node 1 (gpu_id 701): no compatible destination; "
			    "best candidate node 3 (gpu_id 703): simd_count: source 240, "
			    "destination 64 (must be equal)");
	match_result_free(&res);

	/* MI350X and MI300X SPX: both 8 XCCs, different compute shape */
	req = request(t, mi350x, 1, t, mi300x_spx, 1);
	expect_incompatible(&req, &res);
	assert_contains(res.reason, "best candidate node 4 (gpu_id 704): simd_count: source 1024, "
				    "destination 1216");
	match_result_free(&res);

	/* the Radeon VII finds no home among the other workstation GPUs */
	req = request(t, vii, 1, t, (const uint32_t[]){2, 3, 6}, 3);
	expect_incompatible(&req, &res);
	assert_contains(res.reason, "source GPU node 1 (gpu_id 701): no compatible destination");
	match_result_free(&res);
	tree_close(t);
}

/* A CPX partition of the 63-partition MI300X box is not an SPX MI300X. */
static void test_mi300x_cpx_partition_vs_spx(void **state)
{
	static const uint32_t part[] = {2}, spx[] = {4};
	struct tree *cpx = tree_slot(state, 0), *ws = tree_slot(state, 1);
	struct match_request req;
	struct match_result res;

	(void)state;
	tree_copy(cpx, MI300X, 500);
	tree_copy(ws, WORKSTN, 700);
	req = request(cpx, part, 1, ws, spx, 1);
	expect_incompatible(&req, &res);
	assert_string_equal(res.reason,
			    "source GPU node 2 (gpu_id 502): no compatible destination; "
			    "best candidate node 4 (gpu_id 704): simd_count: source 152, "
			    "destination 1216 (must be equal)");
	match_result_free(&res);
	req = request(ws, spx, 1, cpx, NULL, 0);
	expect_incompatible(&req, &res);
	assert_contains(res.reason, "simd_count: source 1216, destination 152");
	match_result_free(&res);
	tree_close(cpx);
	tree_close(ws);
}

/* ---- old key sets ------------------------------------------------------------------ */

static void test_vega10_old_keys(void **state)
{
	struct tree *old = tree_slot(state, 0), *newer = tree_slot(state, 1);
	struct match_request req;
	struct match_result res;

	(void)state;
	tree_open(old, VEGA10);
	assert_false(kfd_prop_present(topo_node(&old->topo, 1), KFD_PROP_gfx_target_version));
	tree_copy(newer, VEGA10, 0);
	write_file(newer->root, "nodes/1/gpu_id", "4242\n");
	set_node_prop(newer, 1, "gfx_target_version", 90000);
	set_node_prop(newer, 1, "num_gws", 0);
	set_node_prop(newer, 1, "num_sdma_engines", 2);
	set_node_prop(newer, 1, "num_sdma_xgmi_engines", 0);
	set_node_prop(newer, 1, "num_xcc", 1);
	set_node_prop(newer, 1, "unique_id", 1234567);
	set_node_prop(newer, 1, "domain", 0);
	set_node_prop(newer, 1, "hive_id", 0);

	/* old checkpoint onto a newer kernel: only common keys count */
	req = request(old, NULL, 0, newer, NULL, 0);
	expect_compatible(&req, &res);
	assert_int_equal(res.n_map, 1);
	assert_int_equal(res.map[0].src_gpu_id, 13261);
	assert_int_equal(res.map[0].dst_gpu_id, 4242);
	assert_int_equal(res.map[0].dst_render_minor, 128);
	match_result_free(&res);

	/* and back (num_gws 0 on the source is no problem either) */
	req = request(newer, NULL, 0, old, NULL, 0);
	expect_compatible(&req, &res);
	assert_int_equal(res.map[0].dst_gpu_id, 13261);
	match_result_free(&res);

	/* a key both sides have is still compared */
	set_node_prop(newer, 1, "simd_count", 224);
	req = request(old, NULL, 0, newer, NULL, 0);
	expect_incompatible(&req, &res);
	assert_contains(res.reason, "simd_count: source 256, destination 224 (must be equal)");
	match_result_free(&res);
	tree_close(old);
	tree_close(newer);
}

/* ---- environment switches ---------------------------------------------------------- */

/* Each relaxable check: a destination that fails it, then the variable that lets it pass. */
static void test_env_switches_on_mi308x(void **state)
{
	static const struct {
		const char *var, *key, *expect;
		uint64_t value;
		bool vram;
	} cases[] = {
		{"KFD_CAPABILITY_CHECK", "capability",
		 "capability: source 746037888, "
		 "destination 746037889 (must be equal)",
		 746037889, false},
		{"KFD_NUM_GWS_CHECK", "num_gws", "num_gws: source 64, destination 32", 32, false},
		{"KFD_CACHES_COUNT_CHECK", "caches_count",
		 "caches_count: source 46, destination 45", 45, false},
		{"KFD_FW_VER_CHECK", "fw_version", "fw_version: source 149, destination 148", 148,
		 false},
		{"KFD_SDMA_FW_VER_CHECK", "sdma_fw_version",
		 "sdma_fw_version: source 19, destination 18", 18, false},
		{"KFD_VRAM_SIZE_CHECK", "size_in_bytes",
		 "vram_size: source 51539607552, destination 51539607551", MI308X_VRAM - 1, true},
	};
	static const uint32_t one[] = {2};
	struct tree *src = tree_slot(state, 0), *dst = tree_slot(state, 1);
	struct match_request req;
	struct match_result res;

	(void)state;
	tree_open(src, MI308X);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		tree_copy(dst, MI308X, 0);
		if (cases[k].vram)
			set_node_vram(dst, 2, cases[k].value);
		else
			set_node_prop(dst, 2, cases[k].key, cases[k].value);
		reset_env(NULL);
		req = request(src, one, 1, dst, one, 1);
		expect_incompatible(&req, &res);
		assert_contains(res.reason, cases[k].expect);
		match_result_free(&res);

		setenv(cases[k].var, "NO", 1);
		req = request(src, one, 1, dst, one, 1);
		expect_compatible(&req, &res);
		assert_int_equal(res.map[0].dst_node, 2);
		match_result_free(&res);
		tree_close(dst);
	}
	tree_close(src);
}

/* Partitions on one socket must stay on one socket unless KFD_NUMA_CHECK=0. */
static void test_env_numa_on_mi308x(void **state)
{
	static const uint32_t pair[] = {2, 3}, sockets[] = {4, 18};
	struct tree *t = tree_slot(state, 0);
	struct match_request req;
	struct match_result res;

	(void)state;
	tree_open(t, MI308X);
	req = request(t, pair, 2, t, sockets, 2);
	expect_incompatible(&req, &res);
	assert_string_equal(res.reason,
			    "source GPUs node 2 (gpu_id 24248) and node 3 (gpu_id 41657) "
			    "share CPU node 0; no destination pair among their candidates "
			    "shares a CPU node (KFD_NUMA_CHECK=0 disables this check)");
	match_result_free(&res);

	setenv("KFD_NUMA_CHECK", "no", 1);
	req = request(t, pair, 2, t, sockets, 2);
	expect_compatible(&req, &res);
	assert_int_equal(res.map[0].dst_node, 4);
	assert_int_equal(res.map[1].dst_node, 18);
	match_result_free(&res);
	tree_close(t);
}

static void test_env_invalid_value(void **state)
{
	struct match_checks checks;
	char err[256];

	(void)state;
	setenv("KFD_SDMA_FW_VER_CHECK", "2", 1);
	assert_int_equal(checks_read(&checks, err, sizeof(err)), -EINVAL);
	assert_contains(err, "KFD_SDMA_FW_VER_CHECK");
}

/* ---- determinism and speed ---------------------------------------------------------- */

static void test_deterministic_mi308x(void **state)
{
	static const uint32_t job[] = {33, 2, 17, 9, 21, 22, 5};
	struct tree *src = tree_slot(state, 0), *dst = tree_slot(state, 1);
	struct match_request req;
	struct match_result a, b;

	(void)state;
	tree_open(src, MI308X);
	tree_copy(dst, MI308X, 2000);
	req = request(src, job, 7, dst, NULL, 0);
	expect_compatible(&req, &a);
	expect_compatible(&req, &b);
	assert_int_equal(a.n_map, 7);
	assert_memory_equal(a.map, b.map, a.n_map * sizeof(*a.map));
	assert_int_equal(a.search_steps, b.search_steps);
	assert_physical_gpus_kept(&req, &a);
	match_result_free(&a);
	match_result_free(&b);
	tree_close(src);
	tree_close(dst);
}

/*
 * A match, timed for the log; its speed is checked as work done, not as a
 * clock (a busy machine is slow, the search is not): no backtracking
 * through permutations, i.e. the first solution after at most two
 * assignments per source (one each, here), then at most the improvement
 * budget.
 */
static void time_match(const struct match_request *req, struct match_result *res, const char *what)
{
	struct timespec t0;
	double s;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	expect_compatible(req, res);
	s = seconds_since(&t0);
	print_message("# %s: %.2f ms, %llu search steps\n", what, s * 1e3,
		      (unsigned long long)res->search_steps);
	if (res->search_steps > 2 * res->n_map + IMPROVE_STEPS)
		fail_msg("%s: %llu search steps for %zu sources: more than two per source plus the "
			 "improvement budget (%d)",
			 what, (unsigned long long)res->search_steps, res->n_map, IMPROVE_STEPS);
}

static void test_mi300x_63_partitions_speed(void **state)
{
	struct tree *src = tree_slot(state, 0), *other = tree_slot(state, 1);
	struct match_request req;
	struct match_result res;

	(void)state;
	tree_copy(src, MI300X, 100);
	tree_copy(other, MI300X, 5000);

	req = request(src, NULL, 0, src, NULL, 0);
	time_match(&req, &res, "MI300X 63 partitions onto itself");
	assert_int_equal(res.n_map, 63);
	assert_identity(&res);
	match_result_free(&res);

	req = request(src, NULL, 0, other, NULL, 0);
	time_match(&req, &res, "MI300X 63 partitions onto other gpu_ids");
	assert_int_equal(res.n_map, 63);
	assert_physical_gpus_kept(&req, &res);
	for (size_t i = 0; i < res.n_map; i++)
		assert_int_equal(res.map[i].dst_gpu_id, 5000 + res.map[i].dst_node);
	match_result_free(&res);
	tree_close(src);
	tree_close(other);
}

/* Number of source physical GPUs (unique_id) whose partitions land on more than one. */
static size_t count_split_gpus(const struct match_request *req, const struct match_result *res)
{
	size_t splits = 0;

	for (size_t a = 0; a < res->n_map; a++) {
		uint64_t uid = topo_node(req->src, res->map[a].src_node)->props.unique_id;
		bool first = true, split = false;

		for (size_t b = 0; b < res->n_map; b++) {
			const struct kfd_node *sb = topo_node(req->src, res->map[b].src_node);

			if (sb->props.unique_id != uid)
				continue;
			first &= b >= a;
			split |= dst_node(req, &res->map[b])->props.unique_id !=
				 dst_node(req, &res->map[a])->props.unique_id;
		}
		splits += first && split;
	}
	return splits;
}

/*
 * 7 whole MI300X GPUs (56 CPX partitions) onto another host where one
 * partition of GPU 4 is unusable (older firmware) and GPU 7 has only 7
 * partitions: one source GPU has to be split, and only one. Taking the
 * lowest free partitions would start a source GPU on the 7 good partitions
 * of GPU 4 and split a second one.
 */
static void test_mi300x_one_split_when_one_partition_is_bad(void **state)
{
	struct tree *src = tree_slot(state, 0), *dst = tree_slot(state, 1);
	uint32_t job[56];
	struct match_request req;
	struct match_result res;

	for (uint32_t i = 0; i < 56; i++)
		job[i] = 2 + i;
	tree_copy(src, MI300X, 100);
	tree_copy(dst, MI300X, 5000);
	set_node_prop(dst, 34, "fw_version", 170);
	req = request(src, job, 56, dst, NULL, 0);
	time_match(&req, &res, "MI300X 56 partitions onto a host with a bad partition");
	assert_int_equal(res.n_map, 56);
	assert_int_equal(count_split_gpus(&req, &res), 1);
	for (size_t i = 0; i < res.n_map; i++) {
		assert_int_not_equal(res.map[i].dst_node, 34);
		/* sockets kept: nodes 2-33 hang off CPU 0, 34-64 off CPU 1 */
		assert_int_equal(res.map[i].src_node < 34, res.map[i].dst_node < 34);
	}
	match_result_free(&res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_identity_every_capture, trees_setup,
						trees_teardown),
		cmocka_unit_test_setup_teardown(test_source_without_gpu_id, trees_setup,
						trees_teardown),
		cmocka_unit_test_setup_teardown(test_mi210_job_moves_to_other_hive, trees_setup,
						trees_teardown),
		cmocka_unit_test_setup_teardown(test_mi210_pair_keeps_xgmi, trees_setup,
						trees_teardown),
		cmocka_unit_test_setup_teardown(test_mi210_pair_cannot_span_hives, trees_setup,
						trees_teardown),
		cmocka_unit_test_setup_teardown(test_mi210_other_host, trees_setup, trees_teardown),
		cmocka_unit_test_setup_teardown(test_mi308x_partitions_move_across_domains,
						trees_setup, trees_teardown),
		cmocka_unit_test_setup_teardown(test_mi308x_sparse_render_minors, trees_setup,
						trees_teardown),
		cmocka_unit_test_setup_teardown(test_mi308x_too_few_destinations, trees_setup,
						trees_teardown),
		cmocka_unit_test_setup_teardown(test_mi308x_slightly_smaller_vram, trees_setup,
						trees_teardown),
		cmocka_unit_test_setup_teardown(test_mi308x_other_host_smaller_partitions,
						trees_setup, trees_teardown),
		cmocka_unit_test_setup_teardown(test_workstation_radeon_vii_not_on_navi23,
						trees_setup, trees_teardown),
		cmocka_unit_test_setup_teardown(test_mi300x_cpx_partition_vs_spx, trees_setup,
						trees_teardown),
		cmocka_unit_test_setup_teardown(test_vega10_old_keys, trees_setup, trees_teardown),
		cmocka_unit_test_setup_teardown(test_env_switches_on_mi308x, trees_setup,
						trees_teardown),
		cmocka_unit_test_setup_teardown(test_env_numa_on_mi308x, trees_setup,
						trees_teardown),
		cmocka_unit_test_setup(test_env_invalid_value, reset_env),
		cmocka_unit_test_setup_teardown(test_deterministic_mi308x, trees_setup,
						trees_teardown),
		cmocka_unit_test_setup_teardown(test_mi300x_one_split_when_one_partition_is_bad,
						trees_setup, trees_teardown),
		cmocka_unit_test_setup_teardown(test_mi300x_63_partitions_speed, trees_setup,
						trees_teardown),
	};

	reset_env(NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
