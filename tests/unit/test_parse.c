// SPDX-License-Identifier: MIT
/*
 * topo_load() against the real captures in $KFD_FIXTURES (default
 * tests/fixtures/kfd-topologies), and against temporary copies of them that are
 * corrupted, trimmed or made unreadable. The fixtures themselves are never
 * touched.
 *
 * Values are checked two ways: a generic pass compares every node with what a
 * separate stdio reader finds in the files, and per-capture tests pin the
 * facts listed in the captures' SOURCE.md and docs/kfd-topology-facts.md.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "topology/topology.h"
#include "tests/unit/fixtures.h"

/* ---- helpers: paths, independent file reading ------------------------------------------- */

static void load_ok(const char *root, struct kfd_topology *t)
{
	char err[512] = "";
	int ret = topo_load(root, t, err, sizeof(err));

	if (ret)
		print_error("topo_load(%s) = %d: %s\n", root, ret, err);
	assert_int_equal(ret, 0);
}

static void load_fixture(const char *name, struct kfd_topology *t)
{
	char root[4096];

	fixture_path(root, sizeof(root), name);
	load_ok(root, t);
}

struct kv {
	char key[64];
	uint64_t val;
};

/* "key value" lines of a file with stdio, independently of parse.c. -1: no file. */
static int read_kvs(const char *path, struct kv *kv, int max)
{
	char line[512];
	int n = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (n < max && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %" SCNu64, kv[n].key, &kv[n].val) == 2)
			n++;
	fclose(f);
	return n;
}

static bool kv_get(const struct kv *kv, int n, const char *key, uint64_t *val)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(kv[i].key, key)) {
			*val = kv[i].val;
			return true;
		}
	return false;
}

static uint64_t kv_must(const struct kv *kv, int n, const char *key)
{
	uint64_t v = 0;

	if (!kv_get(kv, n, key, &v))
		fail_msg("key %s missing", key);
	return v;
}

/* Whole small file as a string; -1 if absent. */
static int slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return (int)n;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Numeric entries of a directory, sorted; -1 if it does not exist. */
static int dir_ids(const char *path, int *ids, int max)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && n < max)
			ids[n++] = atoi(de->d_name);
	closedir(d);
	qsort(ids, (size_t)n, sizeof(int), cmp_int);
	return n;
}

static int prop_by_name(const char *key)
{
	for (int p = 0; p < KFD_PROP__COUNT; p++)
		if (!strcmp(kfd_prop_name((enum kfd_prop)p), key))
			return p;
	return -1;
}

/* ---- generic cross-check of a loaded tree against its files ------------------------------ */

static void check_props(const char *ndir, const struct kfd_node *n)
{
	char path[4200];
	struct kv kv[128];
	int cnt, known = 0;

	fmt(path, sizeof(path), "%s/properties", ndir);
	cnt = read_kvs(path, kv, 128);
	assert_true(cnt > 0);
	for (int i = 0; i < cnt; i++) {
		int p = prop_by_name(kv[i].key);

		if (p < 0)
			continue;
		known++;
		assert_true(kfd_prop_present(n, (enum kfd_prop)p));
		assert_int_equal(kfd_prop_get(n, (enum kfd_prop)p), kv[i].val);
	}
	assert_int_equal(__builtin_popcountll(n->props.present), known);
	assert_int_equal(n->is_gpu, kv_must(kv, cnt, "simd_count") > 0);
}

static void check_ids_and_name(const char *ndir, const struct kfd_node *n)
{
	char path[4200], buf[256];
	int len;

	fmt(path, sizeof(path), "%s/gpu_id", ndir);
	if (slurp(path, buf, sizeof(buf)) >= 0)
		assert_int_equal(n->gpu_id, strtoul(buf, NULL, 10));
	else
		assert_int_equal(n->gpu_id, 0);

	fmt(path, sizeof(path), "%s/name", ndir);
	len = slurp(path, buf, sizeof(buf));
	if (len < 0)
		len = 0;
	if (len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	buf[len] = '\0';
	assert_string_equal(n->name, buf);
}

static void check_links(const char *ndir, const char *sub, const struct kfd_link *links,
			size_t n_links, const struct kfd_node *n, enum kfd_prop count_prop)
{
	char path[4200];
	int ids[4096], cnt;

	fmt(path, sizeof(path), "%s/%s", ndir, sub);
	cnt = dir_ids(path, ids, 4096);
	if (cnt < 0) {
		assert_int_equal(n_links, 0);
		return;
	}
	assert_int_equal(n_links, cnt);
	/* The count property matches whenever the directory was captured whole. */
	if (cnt && ids[cnt - 1] == cnt - 1 && kfd_prop_present(n, count_prop))
		assert_int_equal(kfd_prop_get(n, count_prop), n_links);
	for (int i = 0; i < cnt; i++) {
		struct kv kv[32];
		int k;

		fmt(path, sizeof(path), "%s/%s/%d/properties", ndir, sub, ids[i]);
		k = read_kvs(path, kv, 32);
		assert_int_equal(links[i].type, kv_must(kv, k, "type"));
		assert_int_equal(links[i].node_from, kv_must(kv, k, "node_from"));
		assert_int_equal(links[i].node_to, kv_must(kv, k, "node_to"));
		assert_int_equal(links[i].weight, kv_must(kv, k, "weight"));
		assert_int_equal(links[i].flags, kv_must(kv, k, "flags"));
		assert_int_equal(links[i].min_bandwidth, kv_must(kv, k, "min_bandwidth"));
		assert_int_equal(links[i].max_bandwidth, kv_must(kv, k, "max_bandwidth"));
	}
}

static void check_banks_and_caches(const char *ndir, const struct kfd_node *n)
{
	char path[4200];
	int ids[4096], cnt;
	uint64_t vram = 0;
	uint32_t heap = 0;

	fmt(path, sizeof(path), "%s/caches", ndir);
	cnt = dir_ids(path, ids, 4096);
	assert_int_equal(n->n_caches, cnt < 0 ? 0 : cnt);
	if (cnt >= 0)
		assert_int_equal(kfd_prop_get(n, KFD_PROP_caches_count), cnt);

	fmt(path, sizeof(path), "%s/mem_banks", ndir);
	cnt = dir_ids(path, ids, 4096);
	assert_int_equal(n->n_mem_banks, cnt < 0 ? 0 : cnt);
	for (int i = 0; i < cnt; i++) {
		struct kv kv[16];
		int k;
		uint64_t type;

		fmt(path, sizeof(path), "%s/mem_banks/%d/properties", ndir, ids[i]);
		k = read_kvs(path, kv, 16);
		type = kv_must(kv, k, "heap_type");
		assert_int_equal(n->mem_banks[i].heap_type, type);
		assert_int_equal(n->mem_banks[i].size_in_bytes, kv_must(kv, k, "size_in_bytes"));
		if (type == 1 || type == 2) {
			vram += kv_must(kv, k, "size_in_bytes");
			heap = heap == 2 ? 2 : (uint32_t)type;
		}
	}
	assert_int_equal(n->vram_size, vram);
	assert_int_equal(n->vram_heap_type, heap);
}

static void check_against_files(const char *root, const struct kfd_topology *t)
{
	char path[4200], buf[64];
	int ids[4096], cnt;

	fmt(path, sizeof(path), "%s/nodes", root);
	cnt = dir_ids(path, ids, 4096);
	assert_int_equal(t->n_nodes, cnt);

	fmt(path, sizeof(path), "%s/generation_id", root);
	if (slurp(path, buf, sizeof(buf)) >= 0) {
		assert_true(t->has_generation_id);
		assert_int_equal(t->generation_id, strtoul(buf, NULL, 10));
	} else {
		assert_false(t->has_generation_id);
		assert_int_equal(t->generation_id, 0);
	}

	for (size_t i = 0; i < t->n_nodes; i++) {
		const struct kfd_node *n = &t->nodes[i];

		fmt(path, sizeof(path), "%s/nodes/%zu", root, i);
		assert_int_equal(n->index, i);
		assert_true(n->accessible);
		check_props(path, n);
		check_ids_and_name(path, n);
		check_banks_and_caches(path, n);
		check_links(path, "io_links", n->io_links, n->n_io_links, n,
			    KFD_PROP_io_links_count);
		check_links(path, "p2p_links", n->p2p_links, n->n_p2p_links, n,
			    KFD_PROP_p2p_links_count);
	}
}

static size_t count_gpus(const struct kfd_topology *t)
{
	size_t g = 0;

	for (size_t i = 0; i < t->n_nodes; i++)
		g += t->nodes[i].is_gpu;
	return g;
}

static void test_all_fixtures_match_files(void **state)
{
	(void)state;
	for (size_t f = 0; f < sizeof(fixture_full_trees) / sizeof(fixture_full_trees[0]); f++) {
		struct kfd_topology t;
		char root[4096];

		fixture_path(root, sizeof(root), fixture_full_trees[f]);
		load_ok(root, &t);
		check_against_files(root, &t);
		topo_free(&t);
	}
}

/* ---- per-capture facts ---------------------------------------------------------------------- */

static const struct kfd_node *node(const struct kfd_topology *t, uint32_t i)
{
	const struct kfd_node *n = topo_node(t, i);

	assert_non_null(n);
	return n;
}

static void test_vega10(void **state)
{
	struct kfd_topology t;
	const struct kfd_node *gpu;

	(void)state;
	load_fixture(VEGA10, &t);
	assert_int_equal(t.n_nodes, 2);
	assert_int_equal(count_gpus(&t), 1);
	assert_true(t.has_generation_id);
	assert_int_equal(t.generation_id, 2);
	assert_false(node(&t, 0)->is_gpu);
	assert_int_equal(node(&t, 0)->props.cpu_cores_count, 20);
	gpu = node(&t, 1);
	assert_true(gpu->is_gpu);
	assert_int_equal(gpu->gpu_id, 13261);
	assert_ptr_equal(topo_gpu_by_id(&t, 13261), gpu);
	assert_int_equal(gpu->props.device_id, 26720);
	assert_int_equal(gpu->props.location_id, 6400);
	assert_int_equal(gpu->props.drm_render_minor, 128);
	assert_int_equal(gpu->props.simd_count, 256);
	assert_string_equal(gpu->name, "");
	/* old key set: these lines do not exist in the 2018 capture */
	assert_false(kfd_prop_present(gpu, KFD_PROP_gfx_target_version));
	assert_false(kfd_prop_present(gpu, KFD_PROP_domain));
	assert_false(kfd_prop_present(gpu, KFD_PROP_hive_id));
	assert_false(kfd_prop_present(gpu, KFD_PROP_unique_id));
	assert_false(kfd_prop_present(gpu, KFD_PROP_num_xcc));
	assert_false(kfd_prop_present(gpu, KFD_PROP_p2p_links_count));
	assert_true(kfd_prop_present(gpu, KFD_PROP_local_mem_size));
	/* 16 GiB HBM2 less the 16 MiB the driver reserves */
	assert_int_equal(gpu->vram_size, 17163091968ULL);
	assert_int_equal(gpu->vram_heap_type, KFD_HEAP_FB_PUBLIC);
	assert_int_equal(gpu->n_caches, 96);
	assert_int_equal(gpu->n_io_links, 1);
	assert_int_equal(gpu->io_links[0].type, KFD_IOLINK_PCIEXPRESS);
	assert_int_equal(topo_gpu_cpu_node(&t, gpu), 0);
	assert_true(topo_gpu_cpu_visible(&t, gpu));
	assert_int_equal(node(&t, 0)->vram_size, 0);
	topo_free(&t);
}

static void test_mi210(void **state)
{
	struct kfd_topology t;

	(void)state;
	load_fixture(MI210, &t);
	assert_int_equal(t.n_nodes, 10);
	assert_int_equal(count_gpus(&t), 8);
	assert_false(t.has_generation_id);
	for (uint32_t i = 2; i < 10; i++) {
		const struct kfd_node *g = node(&t, i);
		uint64_t hive = i < 6 ? 12609507387757274807ULL : 18091350218769748594ULL;

		assert_true(g->is_gpu);
		assert_int_equal(g->gpu_id, 0); /* no gpu_id files captured */
		assert_int_equal(g->props.device_id, 29711);
		assert_int_equal(g->props.drm_render_minor, 128 + i - 2);
		assert_int_equal(g->props.hive_id, hive);
		assert_int_equal(g->vram_size, 0); /* no mem_banks captured */
		assert_int_equal(topo_gpu_cpu_node(&t, g), i < 6 ? 0 : 1);
		assert_int_equal(topo_io_link(g, i < 6 ? 0 : 1)->type, KFD_IOLINK_PCIEXPRESS);
		assert_int_equal(topo_io_link(g, i < 6 ? 0 : 1)->weight, 20);
		for (uint32_t j = 2; j < 10; j++) {
			if (j == i)
				continue;
			if ((i < 6) == (j < 6)) {
				const struct kfd_link *l = topo_io_link(g, j);

				assert_non_null(l);
				assert_int_equal(l->type, KFD_IOLINK_XGMI);
				assert_int_equal(l->weight, 15);
				assert_int_equal(l->max_bandwidth, 50000);
			} else {
				assert_null(topo_io_link(g, j));
				assert_int_equal(topo_p2p_link(g, j)->weight, 72);
			}
		}
		assert_int_equal(topo_p2p_link(g, i < 6 ? 1 : 0)->weight, 52);
	}
	topo_free(&t);
}

static void test_mi300x(void **state)
{
	struct kfd_topology t;
	struct timespec t0, t1;
	double ms = 0;
	const int runs = 5;

	(void)state;
	for (int r = 0; r < runs; r++) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		load_fixture(MI300X, &t);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ms += (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
		      (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
		if (r < runs - 1)
			topo_free(&t);
	}
	printf("# topo_load(%s): %.2f ms average over %d runs\n", MI300X, ms / runs, runs);

	assert_int_equal(t.n_nodes, 65);
	assert_int_equal(count_gpus(&t), 63);
	assert_int_equal(t.generation_id, 80);
	assert_int_equal(node(&t, 0)->n_io_links, 33);
	assert_int_equal(node(&t, 1)->n_io_links, 32);
	for (uint32_t i = 2; i < 65; i++) {
		const struct kfd_node *g = node(&t, i);

		assert_true(g->is_gpu);
		assert_int_equal(g->props.io_links_count, 63);
		assert_int_equal(g->n_io_links, 63);
		assert_int_equal(g->props.simd_count, 152);
		assert_int_equal(g->props.num_xcc, 1);
		assert_int_equal(g->props.drm_render_minor, 128 + i - 2);
		assert_int_equal(g->props.hive_id, 15188982192727901047ULL);
		assert_int_equal(g->n_p2p_links, 0);
		assert_int_equal(topo_gpu_cpu_node(&t, g), i <= 33 ? 0 : 1);
	}
	/* partitions of the first GPU: base BDF 05:00.0 + partition index */
	for (uint32_t p = 0; p < 8; p++) {
		assert_int_equal(node(&t, 2 + p)->props.location_id, 1280 + p);
		assert_int_equal(node(&t, 2 + p)->props.unique_id, node(&t, 2)->props.unique_id);
		if (p)
			assert_int_equal(topo_io_link(node(&t, 2), 2 + p)->weight, 13);
	}
	assert_int_equal(topo_io_link(node(&t, 2), 10)->weight, 41);
	assert_int_equal(topo_io_link(node(&t, 2), 10)->type, KFD_IOLINK_XGMI);
	topo_free(&t);
}

static void test_mi308x(void **state)
{
	static const uint32_t first_ids[] = {24248, 41657, 59065, 2236};
	struct kfd_topology t;

	(void)state;
	load_fixture(MI308X, &t);
	assert_int_equal(t.n_nodes, 34);
	assert_int_equal(count_gpus(&t), 32);
	assert_int_equal(t.generation_id, 33);
	for (uint32_t i = 0; i < 2; i++) {
		assert_false(node(&t, i)->is_gpu);
		assert_int_equal(node(&t, i)->gpu_id, 0);
		assert_string_equal(node(&t, i)->name, "");
		assert_int_equal(node(&t, i)->props.cpu_cores_count, 112);
	}
	for (uint32_t k = 0; k < 4; k++) {
		assert_int_equal(node(&t, 2 + k)->gpu_id, first_ids[k]);
		assert_ptr_equal(topo_gpu_by_id(&t, first_ids[k]), node(&t, 2 + k));
	}
	for (uint32_t i = 2; i < 34; i++) {
		const struct kfd_node *g = node(&t, i);
		uint32_t gpu = (i - 2) / 4, part = (i - 2) % 4;

		assert_true(g->is_gpu);
		assert_int_not_equal(g->gpu_id, 0);
		assert_string_equal(g->name, "ip discovery");
		assert_int_equal(g->props.drm_render_minor, 128 + 8 * gpu + part);
		assert_int_equal(g->props.domain, i < 18 ? 0 : 1);
		assert_int_equal(g->props.hive_id, 2095653680343411291ULL);
		assert_int_equal(g->props.num_xcc, 1);
		assert_int_equal(g->props.simd_count, 80);
		assert_int_equal(g->n_caches, 46);
		assert_int_equal(g->vram_heap_type, KFD_HEAP_FB_PUBLIC);
		assert_true(g->vram_size > 47ULL << 30);
	}
	assert_int_equal(node(&t, 2)->vram_size, 51539607552ULL);
	for (uint32_t p = 0; p < 4; p++)
		assert_int_equal(node(&t, 18 + p)->props.location_id, 2816 + p);
	assert_int_equal(node(&t, 2)->props.location_id, 2560);
	topo_free(&t);
}

static void test_mi300a(void **state)
{
	struct kfd_topology t;

	(void)state;
	load_fixture(MI300A, &t);
	assert_int_equal(t.n_nodes, 8);
	assert_int_equal(count_gpus(&t), 4);
	assert_false(t.has_generation_id);
	for (uint32_t i = 0; i < 8; i++) {
		const struct kfd_node *n = node(&t, i);

		assert_int_equal(n->is_gpu, i >= 4);
		assert_int_equal(n->props.hive_id, 9034655720432782706ULL);
		assert_int_equal(n->n_io_links, 0); /* properties only */
		assert_int_equal(n->props.io_links_count, 4);
		if (i < 4) {
			assert_int_equal(n->props.cpu_cores_count, 48);
			assert_int_equal(n->props.cpu_core_id_base, 64 * i);
			continue;
		}
		assert_int_equal(n->props.location_id, 512);
		assert_int_equal(n->props.domain, i - 4);
		assert_int_equal(n->props.drm_render_minor, 128 + 8 * (i - 4));
		assert_int_equal(n->props.num_xcc, 6);
		assert_int_equal(n->props.simd_count, 912);
		assert_int_equal(n->props.device_id, 29856);
		assert_int_equal(topo_gpu_cpu_node(&t, n), -1);
	}
	topo_free(&t);
}

static void test_workstation(void **state)
{
	static const uint32_t to4[] = {2, 4, 5, 6, 7, 8, 9};
	struct kfd_topology t;
	const struct kfd_node *n4;

	(void)state;
	load_fixture(WORKSTN, &t);
	assert_int_equal(t.n_nodes, 7);
	assert_int_equal(count_gpus(&t), 6);
	assert_false(t.has_generation_id);
	assert_string_equal(node(&t, 1)->name, "vega20");
	assert_string_equal(node(&t, 2)->name, "");
	assert_string_equal(node(&t, 3)->name, "dimgrey_cavefish");
	assert_int_equal(node(&t, 1)->props.device_id, 26287);
	assert_int_equal(node(&t, 1)->vram_size, 17163091968ULL);
	/* unique_id 0 is a value, not an absence */
	for (uint32_t i = 2; i <= 3; i++) {
		assert_true(kfd_prop_present(node(&t, i), KFD_PROP_unique_id));
		assert_int_equal(node(&t, i)->props.unique_id, 0);
	}
	assert_int_not_equal(node(&t, 1)->props.unique_id, 0);
	assert_false(kfd_prop_present(node(&t, 1), KFD_PROP_cwsr_size));
	assert_true(kfd_prop_present(node(&t, 4), KFD_PROP_cwsr_size));
	assert_true(kfd_prop_present(node(&t, 5), KFD_PROP_capability2));
	assert_int_equal(node(&t, 5)->props.gfx_target_version, 90500);
	for (uint32_t i = 1; i <= 3; i++) {
		assert_int_equal(topo_gpu_cpu_node(&t, node(&t, i)), 0);
		assert_int_equal(node(&t, i)->n_p2p_links, 2);
	}
	assert_int_equal(topo_p2p_link(node(&t, 1), 3)->weight, 40);
	/* node 4 was spliced in from another host: io_links 1..7 only, its old ids kept */
	n4 = node(&t, 4);
	assert_int_equal(n4->n_io_links, 7);
	assert_int_equal(n4->props.io_links_count, 8);
	for (size_t k = 0; k < 7; k++) {
		assert_int_equal(n4->io_links[k].node_from, 3);
		assert_int_equal(n4->io_links[k].node_to, to4[k]);
		assert_int_equal(n4->io_links[k].type, KFD_IOLINK_XGMI);
		assert_int_equal(n4->io_links[k].max_bandwidth, 64000);
	}
	assert_null(topo_node(&t, n4->io_links[6].node_to));
	assert_int_equal(topo_gpu_cpu_node(&t, n4), -1);
	topo_free(&t);
}

/* ---- temporary trees ------------------------------------------------------------------------ */

static int copy_file(const char *from, const char *to)
{
	char buf[8192];
	int in, out, ret = -1;
	ssize_t r;

	in = open(from, O_RDONLY);
	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0)
		goto out;
	while ((r = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)r) != r)
			goto out;
	ret = r < 0 ? -1 : 0;
out:
	if (out >= 0)
		close(out);
	close(in);
	return ret;
}

static int cmp_name_desc(const void *a, const void *b)
{
	return strcmp(*(char *const *)b, *(char *const *)a);
}

/* Recursive copy, writable, entries created in reverse name order. */
static void copy_tree(const char *from, const char *to)
{
	char *names[8192], src[4096], dst[4096];
	struct dirent *de;
	struct stat st;
	size_t n = 0;
	DIR *d;

	assert_int_equal(mkdir(to, 0755), 0);
	d = opendir(from);
	assert_non_null(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && n < 8192)
			names[n++] = strdup(de->d_name);
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_name_desc);
	for (size_t i = 0; i < n; i++) {
		fmt(src, sizeof(src), "%s/%s", from, names[i]);
		fmt(dst, sizeof(dst), "%s/%s", to, names[i]);
		assert_int_equal(lstat(src, &st), 0);
		if (S_ISDIR(st.st_mode))
			copy_tree(src, dst);
		else
			assert_int_equal(copy_file(src, dst), 0);
		free(names[i]);
	}
}

static void remove_tree(const char *path)
{
	char sub[4096];
	struct dirent *de;
	struct stat st;
	DIR *d;

	if (lstat(path, &st))
		return;
	if (!S_ISDIR(st.st_mode)) {
		unlink(path);
		return;
	}
	chmod(path, 0700); /* a test may have taken the permissions away */
	d = opendir(path);
	if (d) {
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			fmt(sub, sizeof(sub), "%s/%s", path, de->d_name);
			remove_tree(sub);
		}
		closedir(d);
	}
	rmdir(path);
}

/* The temporary tree of the running test, removed by the teardown if an assert cut it short. */
static char pending_tmp[4096];

struct tmp_tree {
	char base[4096]; /* mkdtemp directory */
	char root[4096]; /* base/<fixture>: the topology root */
};

static void tmp_copy(struct tmp_tree *tt, const char *fixture, const char *sub)
{
	const char *tmp = getenv("TMPDIR");
	char src[4096];

	fmt(tt->base, sizeof(tt->base), "%s/test_parse.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(tt->base));
	memcpy(pending_tmp, tt->base, sizeof(pending_tmp));
	fmt(tt->root, sizeof(tt->root), "%s/t", tt->base);
	fmt(src, sizeof(src), "%s/%s%s", fixtures_dir(), fixture, sub ? sub : "");
	copy_tree(src, tt->root);
}

/* A gpu-node-only capture as node 0 of a tree of its own. */
static void tmp_node_only(struct tmp_tree *tt, const char *fixture)
{
	char src[4200], dst[4200];

	tmp_copy(tt, fixture, "/gpu-node");
	fmt(src, sizeof(src), "%s/n", tt->base);
	assert_int_equal(rename(tt->root, src), 0);
	assert_int_equal(mkdir(tt->root, 0755), 0);
	fmt(dst, sizeof(dst), "%s/nodes", tt->root);
	assert_int_equal(mkdir(dst, 0755), 0);
	fmt(dst, sizeof(dst), "%s/nodes/0", tt->root);
	assert_int_equal(rename(src, dst), 0);
}

static void tmp_free(struct tmp_tree *tt)
{
	remove_tree(tt->base);
	pending_tmp[0] = '\0';
}

static int teardown_tmp(void **state)
{
	(void)state;
	if (pending_tmp[0])
		remove_tree(pending_tmp);
	pending_tmp[0] = '\0';
	return 0;
}

static void tpath(char *buf, size_t len, const struct tmp_tree *tt, const char *rel)
{
	fmt(buf, len, "%s/%s", tt->root, rel);
}

static void put(const struct tmp_tree *tt, const char *rel, const char *content)
{
	char path[4200];
	FILE *f;

	tpath(path, sizeof(path), tt, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(content, f) < 0, 0);
	assert_int_equal(fclose(f), 0);
}

static void rm(const struct tmp_tree *tt, const char *rel)
{
	char path[4200];

	tpath(path, sizeof(path), tt, rel);
	remove_tree(path);
}

static void append(char *out, size_t cap, size_t *o, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	assert_true(*o + la + lb < cap);
	memcpy(out + *o, a, la);
	memcpy(out + *o + la, b, lb);
	*o += la + lb;
	out[*o] = '\0';
}

/*
 * Replace the line of `key` in file `rel` with `line` (NULL: drop it, "" with
 * trunc: cut the file right there). Returns the 1-based line number.
 */
static int edit_line(const struct tmp_tree *tt, const char *rel, const char *key, const char *line,
		     bool trunc)
{
	char path[4200], in[16384], out[16384 + 256];
	size_t klen = strlen(key), o = 0;
	int no = 0, found = 0;
	char *p, *save = NULL;

	tpath(path, sizeof(path), tt, rel);
	assert_true(slurp(path, in, sizeof(in)) > 0);
	for (p = strtok_r(in, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
		no++;
		if (!found && !strncmp(p, key, klen) && p[klen] == ' ') {
			found = no;
			if (trunc) {
				append(out, sizeof(out), &o, line, "");
				break;
			}
			if (line)
				append(out, sizeof(out), &o, line, "\n");
			continue;
		}
		append(out, sizeof(out), &o, p, "\n");
	}
	assert_int_not_equal(found, 0);
	put(tt, rel, out);
	return found;
}

/* ---- corrupted trees: every one must fail with a one-line message naming the spot ---------- */

struct bad_case {
	const char *name;
	const char *fixture;
	/* corrupts the copy; writes the expected message fragment into expect */
	void (*apply)(const struct tmp_tree *tt, char *expect, size_t len);
	int ret;
};

#define LINE_AT(file, key, new, trunc)                                                             \
	fmt(expect, len, "/%s:%d:", file, edit_line(tt, file, key, new, trunc))

static void bad_number(const struct tmp_tree *tt, char *expect, size_t len)
{
	LINE_AT("nodes/1/properties", "simd_count", "simd_count 25x6", false);
}

static void negative_number(const struct tmp_tree *tt, char *expect, size_t len)
{
	LINE_AT("nodes/1/properties", "device_id", "device_id -1", false);
}

static void truncated_line(const struct tmp_tree *tt, char *expect, size_t len)
{
	LINE_AT("nodes/1/properties", "location_id", "location_id", true);
}

static void truncated_after_space(const struct tmp_tree *tt, char *expect, size_t len)
{
	int line = edit_line(tt, "nodes/1/properties", "location_id", "location_id ", true);

	fmt(expect, len, "/nodes/1/properties:%d: key without value", line);
}

static void u64_overflow(const struct tmp_tree *tt, char *expect, size_t len)
{
	LINE_AT("nodes/1/properties", "location_id", "location_id 18446744073709551616", false);
}

static void duplicate_key(const struct tmp_tree *tt, char *expect, size_t len)
{
	int line =
		edit_line(tt, "nodes/1/properties", "device_id", "device_id 1\ndevice_id 2", false);

	fmt(expect, len, "/nodes/1/properties:%d: duplicate key device_id", line + 1);
}

static void blank_line(const struct tmp_tree *tt, char *expect, size_t len)
{
	int line = edit_line(tt, "nodes/0/properties", "simd_count", "simd_count 0\n", false);

	fmt(expect, len, "/nodes/0/properties:%d: expected", line + 1);
}

static void empty_properties(const struct tmp_tree *tt, char *expect, size_t len)
{
	put(tt, "nodes/1/properties", "");
	fmt(expect, len, "/nodes/1/properties: empty file");
}

static void no_simd_count(const struct tmp_tree *tt, char *expect, size_t len)
{
	edit_line(tt, "nodes/1/properties", "simd_count", NULL, false);
	fmt(expect, len, "/nodes/1/properties: no simd_count line");
}

static void missing_properties(const struct tmp_tree *tt, char *expect, size_t len)
{
	rm(tt, "nodes/0/properties");
	fmt(expect, len, "/nodes/0/properties: ");
}

static void properties_is_dir(const struct tmp_tree *tt, char *expect, size_t len)
{
	char path[4200];

	rm(tt, "nodes/1/properties");
	tpath(path, sizeof(path), tt, "nodes/1/properties");
	assert_int_equal(mkdir(path, 0755), 0);
	fmt(expect, len, "/nodes/1/properties: a directory, not a regular file");
}

static void huge_properties(const struct tmp_tree *tt, char *expect, size_t len)
{
	static char big[70000];

	for (size_t i = 0; i + 16 < sizeof(big); i += 16)
		memcpy(big + i, "future_key 1234\n", 16);
	put(tt, "nodes/1/properties", big);
	fmt(expect, len, "/nodes/1/properties: larger than");
}

static void link_node_to_range(const struct tmp_tree *tt, char *expect, size_t len)
{
	edit_line(tt, "nodes/1/io_links/0/properties", "node_to", "node_to 4096", false);
	fmt(expect, len, "/nodes/1/io_links/0/properties: node_to 4096 out of range");
}

static void link_node_to_u32(const struct tmp_tree *tt, char *expect, size_t len)
{
	LINE_AT("nodes/1/io_links/0/properties", "node_to", "node_to 4294967296", false);
}

static void link_no_node_to(const struct tmp_tree *tt, char *expect, size_t len)
{
	edit_line(tt, "nodes/0/io_links/0/properties", "node_to", NULL, false);
	fmt(expect, len, "/nodes/0/io_links/0/properties: no node_to line");
}

static void p2p_bad_weight(const struct tmp_tree *tt, char *expect, size_t len)
{
	LINE_AT("nodes/7/p2p_links/0/properties", "weight", "weight 4x", false);
}

static void bank_bad_size(const struct tmp_tree *tt, char *expect, size_t len)
{
	LINE_AT("nodes/1/mem_banks/0/properties", "size_in_bytes", "size_in_bytes 16G", false);
}

static void gpu_id_garbage(const struct tmp_tree *tt, char *expect, size_t len)
{
	put(tt, "nodes/1/gpu_id", "0x33cd\n");
	fmt(expect, len, "/nodes/1/gpu_id:1:");
}

static void gpu_id_too_big(const struct tmp_tree *tt, char *expect, size_t len)
{
	put(tt, "nodes/1/gpu_id", "4294967296\n");
	fmt(expect, len, "/nodes/1/gpu_id:1:");
}

/* 2^64-1 was shown as renderD4294967295 */
static void render_minor_huge(const struct tmp_tree *tt, char *expect, size_t len)
{
	edit_line(tt, "nodes/1/properties", "drm_render_minor",
		  "drm_render_minor 18446744073709551615", false);
	fmt(expect, len, "/nodes/1/properties: drm_render_minor 18446744073709551615 out of range");
}

/* a card node's minor is not a render node's */
static void render_minor_card(const struct tmp_tree *tt, char *expect, size_t len)
{
	edit_line(tt, "nodes/1/properties", "drm_render_minor", "drm_render_minor 1", false);
	fmt(expect, len, "/nodes/1/properties: drm_render_minor 1 out of range");
}

static void gpu_id_two_lines(const struct tmp_tree *tt, char *expect, size_t len)
{
	put(tt, "nodes/1/gpu_id", "13261\n13261\n");
	fmt(expect, len, "/nodes/1/gpu_id:2:");
}

static void gpu_id_empty(const struct tmp_tree *tt, char *expect, size_t len)
{
	put(tt, "nodes/1/gpu_id", "");
	fmt(expect, len, "/nodes/1/gpu_id:1:");
}

static void generation_garbage(const struct tmp_tree *tt, char *expect, size_t len)
{
	put(tt, "generation_id", "two\n");
	fmt(expect, len, "/generation_id:1:");
}

static void name_too_long(const struct tmp_tree *tt, char *expect, size_t len)
{
	put(tt, "nodes/1/name",
	    "a-name-much-longer-than-any-asic-name-the-kernel-would-ever-print-here\n");
	fmt(expect, len, "/nodes/1/name:1: longer than");
}

static void name_two_lines(const struct tmp_tree *tt, char *expect, size_t len)
{
	put(tt, "nodes/1/name", "vega10\nvega10\n");
	fmt(expect, len, "/nodes/1/name:1:");
}

static void node_gap(const struct tmp_tree *tt, char *expect, size_t len)
{
	char a[4200], b[4200];

	tpath(a, sizeof(a), tt, "nodes/9");
	tpath(b, sizeof(b), tt, "nodes/10");
	assert_int_equal(rename(a, b), 0);
	fmt(expect, len, "/nodes: node 9 is missing");
}

static void node_not_numeric(const struct tmp_tree *tt, char *expect, size_t len)
{
	char path[4200];

	tpath(path, sizeof(path), tt, "nodes/gpu");
	assert_int_equal(mkdir(path, 0755), 0);
	fmt(expect, len, "/nodes: entry that is not a decimal index");
}

static void link_leading_zero(const struct tmp_tree *tt, char *expect, size_t len)
{
	char a[4200], b[4200];

	tpath(a, sizeof(a), tt, "nodes/1/io_links/0");
	tpath(b, sizeof(b), tt, "nodes/1/io_links/00");
	assert_int_equal(rename(a, b), 0);
	fmt(expect, len, "/nodes/1/io_links: entry that is not a decimal index");
}

static void node_is_file(const struct tmp_tree *tt, char *expect, size_t len)
{
	rm(tt, "nodes/1");
	put(tt, "nodes/1", "not a directory\n");
	fmt(expect, len, "/nodes/1: ");
}

static void no_nodes(const struct tmp_tree *tt, char *expect, size_t len)
{
	rm(tt, "nodes/0");
	rm(tt, "nodes/1");
	fmt(expect, len, "/nodes: no node directories");
}

static void no_nodes_dir(const struct tmp_tree *tt, char *expect, size_t len)
{
	rm(tt, "nodes");
	fmt(expect, len, "/nodes: ");
}

#define BAD(fixture, fn, ret)                                                                      \
	{                                                                                          \
#fn, fixture, fn, ret                                                              \
	}

static const struct bad_case bad_cases[] = {
	BAD(VEGA10, bad_number, -EINVAL),
	BAD(VEGA10, negative_number, -EINVAL),
	BAD(VEGA10, truncated_line, -EINVAL),
	BAD(VEGA10, truncated_after_space, -EINVAL),
	BAD(VEGA10, u64_overflow, -EINVAL),
	BAD(VEGA10, duplicate_key, -EINVAL),
	BAD(VEGA10, blank_line, -EINVAL),
	BAD(VEGA10, empty_properties, -EINVAL),
	BAD(VEGA10, no_simd_count, -EINVAL),
	BAD(VEGA10, missing_properties, -ENOENT),
	BAD(VEGA10, properties_is_dir, -EISDIR),
	BAD(VEGA10, huge_properties, -EFBIG),
	BAD(VEGA10, link_node_to_range, -EINVAL),
	BAD(VEGA10, link_node_to_u32, -EINVAL),
	BAD(VEGA10, link_no_node_to, -EINVAL),
	BAD(MI210, p2p_bad_weight, -EINVAL),
	BAD(VEGA10, bank_bad_size, -EINVAL),
	BAD(VEGA10, gpu_id_garbage, -EINVAL),
	BAD(VEGA10, gpu_id_too_big, -EINVAL),
	BAD(VEGA10, gpu_id_two_lines, -EINVAL),
	BAD(VEGA10, render_minor_huge, -EINVAL),
	BAD(VEGA10, render_minor_card, -EINVAL),
	BAD(VEGA10, gpu_id_empty, -EINVAL),
	BAD(VEGA10, generation_garbage, -EINVAL),
	BAD(VEGA10, name_too_long, -EINVAL),
	BAD(VEGA10, name_two_lines, -EINVAL),
	BAD(MI210, node_gap, -EINVAL),
	BAD(VEGA10, node_not_numeric, -EINVAL),
	BAD(VEGA10, link_leading_zero, -EINVAL),
	BAD(VEGA10, node_is_file, -ENOTDIR),
	BAD(VEGA10, no_nodes, -EINVAL),
	BAD(VEGA10, no_nodes_dir, -ENOENT),
};

static void test_bad_tree(void **state)
{
	const struct bad_case *bc = *state;
	struct kfd_topology t;
	struct tmp_tree tt;
	char expect[512] = "", err[1024] = "";
	int ret;

	tmp_copy(&tt, bc->fixture, NULL);
	bc->apply(&tt, expect, sizeof(expect));
	memset(&t, 0xa5, sizeof(t));
	ret = topo_load(tt.root, &t, err, sizeof(err));
	print_message("# %s\n", err);
	assert_int_equal(ret, bc->ret);
	assert_non_null(strstr(err, tt.root));
	assert_non_null(strstr(err, expect));
	assert_null(strchr(err, '\n'));
	/* a failed load leaves an empty topology that topo_free accepts */
	assert_null(t.nodes);
	assert_int_equal(t.n_nodes, 0);
	topo_free(&t);
	tmp_free(&tt);
}

/* ---- trees that must load ------------------------------------------------------------------- */

static void assert_same_topology(const struct kfd_topology *a, const struct kfd_topology *b)
{
	assert_int_equal(a->n_nodes, b->n_nodes);
	for (size_t i = 0; i < a->n_nodes; i++) {
		const struct kfd_node *x = &a->nodes[i], *y = &b->nodes[i];

		assert_memory_equal(&x->props, &y->props, sizeof(x->props));
		assert_int_equal(x->is_gpu, y->is_gpu);
		assert_int_equal(x->n_io_links, y->n_io_links);
		if (x->n_io_links)
			assert_memory_equal(x->io_links, y->io_links,
					    x->n_io_links * sizeof(*x->io_links));
	}
}

static void test_unknown_keys_ignored(void **state)
{
	struct kfd_topology orig, t;
	struct tmp_tree tt;

	(void)state;
	load_fixture(VEGA10, &orig);
	tmp_copy(&tt, VEGA10, NULL);
	edit_line(&tt, "nodes/1/properties", "simd_count",
		  "simd_count 256\nfuture_count 7\nfuture_text not-a-number\n"
		  "future_without_value x",
		  false);
	edit_line(&tt, "nodes/1/io_links/0/properties", "weight",
		  "weight 20\nrecommended_sdma_engine_id_mask 3", false);
	edit_line(&tt, "nodes/1/mem_banks/0/properties", "width", "width 2048\nfuture 1", false);
	put(&tt, "nodes/1/mem_banks/0/used_memory", "12345\n"); /* as in the rocprofiler capture */
	put(&tt, "system_properties", "platform_oem not-even-a-number\n");
	load_ok(tt.root, &t);
	assert_same_topology(&orig, &t);
	assert_int_equal(t.nodes[1].vram_size, orig.nodes[1].vram_size);
	topo_free(&t);
	topo_free(&orig);
	tmp_free(&tt);
}

static void test_optional_files_missing(void **state)
{
	static const char *const optional[] = {"gpu_id", "name",     "mem_banks",
					       "caches", "io_links", "p2p_links"};
	struct kfd_topology orig, t;
	struct tmp_tree tt;
	char rel[64];

	(void)state;
	load_fixture(MI308X, &orig);
	tmp_copy(&tt, MI308X, NULL);
	rm(&tt, "generation_id");
	rm(&tt, "system_properties");
	for (int n = 0; n < 34; n++)
		for (size_t k = 0; k < sizeof(optional) / sizeof(optional[0]); k++) {
			fmt(rel, sizeof(rel), "nodes/%d/%s", n, optional[k]);
			rm(&tt, rel);
		}
	load_ok(tt.root, &t);
	assert_false(t.has_generation_id);
	assert_int_equal(t.generation_id, 0);
	assert_int_equal(t.n_nodes, 34);
	for (size_t i = 0; i < t.n_nodes; i++) {
		const struct kfd_node *n = &t.nodes[i];

		assert_true(n->accessible);
		assert_int_equal(n->is_gpu, orig.nodes[i].is_gpu);
		assert_int_equal(n->gpu_id, 0);
		assert_string_equal(n->name, "");
		assert_int_equal(n->n_mem_banks + n->n_caches + n->n_io_links + n->n_p2p_links, 0);
		assert_null(n->io_links);
		assert_int_equal(n->vram_size, 0);
		assert_int_equal(n->vram_heap_type, 0);
		assert_memory_equal(&n->props, &orig.nodes[i].props, sizeof(n->props));
	}
	topo_free(&t);
	topo_free(&orig);
	tmp_free(&tt);
}

static void test_edge_values(void **state)
{
	struct kfd_topology t;
	struct tmp_tree tt;

	(void)state;
	tmp_copy(&tt, VEGA10, NULL);
	edit_line(&tt, "nodes/1/properties", "location_id", "location_id 18446744073709551615",
		  false);
	edit_line(&tt, "nodes/1/properties", "device_id", "device_id 0", false);
	/* the last line need not end in a newline */
	edit_line(&tt, "nodes/1/properties", "max_engine_clk_ccompute",
		  "max_engine_clk_ccompute 3200", true);
	put(&tt, "nodes/1/gpu_id", "4294967295");
	put(&tt, "nodes/1/name", "vega10");
	put(&tt, "generation_id", "0\n");
	load_ok(tt.root, &t);
	assert_int_equal(t.nodes[1].props.location_id, UINT64_MAX);
	assert_true(kfd_prop_present(&t.nodes[1], KFD_PROP_device_id));
	assert_int_equal(t.nodes[1].props.device_id, 0);
	assert_int_equal(t.nodes[1].props.max_engine_clk_ccompute, 3200);
	assert_int_equal(t.nodes[1].gpu_id, UINT32_MAX);
	assert_string_equal(t.nodes[1].name, "vega10");
	assert_true(t.has_generation_id);
	assert_int_equal(t.generation_id, 0);
	topo_free(&t);
	tmp_free(&tt);
}

static void test_vram_mixed_heaps(void **state)
{
	struct kfd_topology t;
	struct tmp_tree tt;
	char path[4200];

	(void)state;
	tmp_copy(&tt, VEGA10, NULL);
	tpath(path, sizeof(path), &tt, "nodes/1/mem_banks/1");
	assert_int_equal(mkdir(path, 0755), 0);
	put(&tt, "nodes/1/mem_banks/1/properties",
	    "heap_type 2\nsize_in_bytes 1000\nflags 0\nwidth 2048\nmem_clk_max 945\n");
	tpath(path, sizeof(path), &tt, "nodes/1/mem_banks/2");
	assert_int_equal(mkdir(path, 0755), 0);
	put(&tt, "nodes/1/mem_banks/2/properties", "heap_type 0\nsize_in_bytes 77\n");
	load_ok(tt.root, &t);
	assert_int_equal(t.nodes[1].n_mem_banks, 3);
	assert_int_equal(t.nodes[1].vram_size, 17163091968ULL + 1000);
	assert_int_equal(t.nodes[1].vram_heap_type, KFD_HEAP_FB_PRIVATE);
	topo_free(&t);

	/* the sum of the FB banks must not wrap */
	edit_line(&tt, "nodes/1/mem_banks/1/properties", "size_in_bytes",
		  "size_in_bytes 18446744073709551615", false);
	assert_int_equal(topo_load(tt.root, &t, NULL, 0), -EINVAL);
	tmp_free(&tt);
}

static void test_link_dir_gaps(void **state)
{
	struct kfd_topology t;
	struct tmp_tree tt;
	char a[4200], b[4200];

	(void)state;
	tmp_copy(&tt, MI308X, NULL);
	/* numeric, not lexical order: 10 after 9, gaps allowed */
	tpath(a, sizeof(a), &tt, "nodes/2/io_links/1");
	tpath(b, sizeof(b), &tt, "nodes/2/io_links/100");
	assert_int_equal(rename(a, b), 0);
	load_ok(tt.root, &t);
	assert_int_equal(t.nodes[2].n_io_links, 32);
	assert_int_equal(t.nodes[2].io_links[0].node_to, 0);
	assert_int_equal(t.nodes[2].io_links[1].node_to, 4);  /* was io_links/2 */
	assert_int_equal(t.nodes[2].io_links[31].node_to, 3); /* was io_links/1 */
	assert_int_equal(topo_gpu_cpu_node(&t, &t.nodes[2]), 0);
	topo_free(&t);
	tmp_free(&tt);
}

/* The gpu-node-only captures, placed as node 0 of a tree of their own. */
static void test_mi100_node(void **state)
{
	struct kfd_topology t;
	struct tmp_tree tt;

	(void)state;
	tmp_node_only(&tt, MI100_NODE);
	load_ok(tt.root, &t);
	assert_int_equal(t.n_nodes, 1);
	assert_true(t.nodes[0].is_gpu);
	assert_int_equal(t.nodes[0].gpu_id, 42700);	  /* file has no newline */
	assert_string_equal(t.nodes[0].name, "arcturus"); /* neither has this one */
	assert_int_equal(t.nodes[0].props.device_id, 29580);
	assert_int_equal(t.nodes[0].props.gfx_target_version, 90008);
	assert_int_equal(t.nodes[0].props.location_id, 8960);
	assert_int_equal(t.nodes[0].props.p2p_links_count, 3);
	topo_free(&t);
	tmp_free(&tt);
}

static void test_rx7900_template(void **state)
{
	struct kfd_topology t;
	struct tmp_tree tt;
	char a[4200], b[4200], err[512];
	int line;

	(void)state;
	tmp_node_only(&tt, RX7900_NODE);
	tpath(a, sizeof(a), &tt, "nodes/0/properties.template");
	tpath(b, sizeof(b), &tt, "nodes/0/properties");
	assert_int_equal(rename(a, b), 0);

	/* the template placeholder is exactly the kind of value that must be refused */
	line = edit_line(&tt, "nodes/0/properties", "drm_render_minor",
			 "drm_render_minor {drm_render_minor}", false);
	assert_int_equal(topo_load(tt.root, &t, err, sizeof(err)), -EINVAL);
	fmt(a, sizeof(a), "/nodes/0/properties:%d: value of drm_render_minor", line);
	assert_non_null(strstr(err, a));

	edit_line(&tt, "nodes/0/properties", "drm_render_minor", "drm_render_minor 130", false);
	put(&tt, "nodes/0/gpu_id", "4242\n");
	load_ok(tt.root, &t);
	assert_int_equal(t.nodes[0].gpu_id, 4242);
	assert_int_equal(t.nodes[0].props.drm_render_minor, 130);
	assert_int_equal(t.nodes[0].props.device_id, 29772);
	assert_int_equal(t.nodes[0].props.wave_front_size, 32);
	assert_true(t.nodes[0].is_gpu);
	topo_free(&t);
	tmp_free(&tt);
}

/* ---- unreadable nodes (device cgroup: EPERM/EACCES) ----------------------------------------- */

/* Root reads anything: give up the capabilities that bypass file modes. */
static int drop_dac_override(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &hdr, data))
		return -1;
	data[CAP_TO_INDEX(CAP_DAC_OVERRIDE)].effective &= ~CAP_TO_MASK(CAP_DAC_OVERRIDE);
	data[CAP_TO_INDEX(CAP_DAC_READ_SEARCH)].effective &= ~CAP_TO_MASK(CAP_DAC_READ_SEARCH);
	return syscall(SYS_capset, &hdr, data) ? -1 : 0;
}

static void chmod_tree(const char *path, mode_t file_mode)
{
	char sub[4200];
	struct dirent *de;
	struct stat st;
	DIR *d;

	assert_int_equal(lstat(path, &st), 0);
	if (!S_ISDIR(st.st_mode)) {
		assert_int_equal(chmod(path, file_mode), 0);
		return;
	}
	d = opendir(path);
	assert_non_null(d);
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		fmt(sub, sizeof(sub), "%s/%s", path, de->d_name);
		chmod_tree(sub, file_mode);
	}
	closedir(d);
}

#define CHILD_CHECK(cond)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "# child check failed, line %d: %s\n", __LINE__, #cond);   \
			ret = 1;                                                                   \
			goto out;                                                                  \
		}                                                                                  \
	} while (0)

/* In a child without DAC override: load and check; exit status 0 = all good. */
typedef int (*hidden_check_fn)(const char *root);

static void run_unprivileged(const char *root, hidden_check_fn fn)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (drop_dac_override())
			exit(2);
		exit(fn(root));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* MI308X with node 3 (gpu_id 41657) hidden. */
static int check_node3_hidden(const char *root)
{
	struct kfd_topology t;
	char err[512];
	int ret = 0;

	CHILD_CHECK(topo_load(root, &t, err, sizeof(err)) == 0);
	CHILD_CHECK(t.n_nodes == 34);
	CHILD_CHECK(!t.nodes[3].accessible);
	CHILD_CHECK(t.nodes[3].index == 3);
	CHILD_CHECK(t.nodes[3].is_gpu);
	CHILD_CHECK(t.nodes[3].gpu_id == 0);
	CHILD_CHECK(t.nodes[3].props.present == 0);
	CHILD_CHECK(t.nodes[3].n_io_links == 0 && t.nodes[3].io_links == NULL);
	CHILD_CHECK(t.nodes[3].n_mem_banks == 0 && t.nodes[3].n_caches == 0);
	CHILD_CHECK(topo_gpu_by_id(&t, 41657) == NULL);
	for (size_t i = 0; i < t.n_nodes; i++)
		CHILD_CHECK(i == 3 || t.nodes[i].accessible);
	CHILD_CHECK(t.nodes[2].gpu_id == 24248 && t.nodes[4].gpu_id == 59065);
	CHILD_CHECK(topo_gpu_cpu_node(&t, &t.nodes[2]) == 0);
	topo_free(&t);
out:
	return ret;
}

static void test_hidden_node_files(void **state)
{
	struct tmp_tree tt;
	char path[4200];

	(void)state;
	tmp_copy(&tt, MI308X, NULL);
	tpath(path, sizeof(path), &tt, "nodes/3");
	chmod_tree(path, 0);
	run_unprivileged(tt.root, check_node3_hidden);
	tmp_free(&tt);
}

static void test_hidden_node_dir(void **state)
{
	struct tmp_tree tt;
	char path[4200];

	(void)state;
	tmp_copy(&tt, MI308X, NULL);
	tpath(path, sizeof(path), &tt, "nodes/3");
	assert_int_equal(chmod(path, 0), 0);
	run_unprivileged(tt.root, check_node3_hidden);
	tmp_free(&tt);
}

/* Only a link file late in the node is unreadable: what was read before is dropped. */
static void test_hidden_node_late_file(void **state)
{
	struct tmp_tree tt;
	char path[4200];

	(void)state;
	tmp_copy(&tt, MI308X, NULL);
	tpath(path, sizeof(path), &tt, "nodes/3/p2p_links/0/properties");
	assert_int_equal(chmod(path, 0), 0);
	run_unprivileged(tt.root, check_node3_hidden);
	tmp_free(&tt);
}

/* MI210 with the three xGMI peers of node 2 hidden. */
static int check_peers_hidden(const char *root)
{
	struct kfd_topology t;
	char err[512];
	int ret = 0;

	CHILD_CHECK(topo_load(root, &t, err, sizeof(err)) == 0);
	for (uint32_t i = 3; i <= 5; i++)
		CHILD_CHECK(!t.nodes[i].accessible && t.nodes[i].is_gpu);
	/* the xGMI links (weight 15) to hidden GPUs are not taken for the CPU link (20) */
	CHILD_CHECK(t.nodes[2].n_io_links == 4);
	CHILD_CHECK(topo_gpu_cpu_node(&t, &t.nodes[2]) == 0);
	topo_free(&t);
out:
	return ret;
}

static void test_hidden_peers(void **state)
{
	struct tmp_tree tt;
	char path[4200];

	(void)state;
	tmp_copy(&tt, MI210, NULL);
	for (int i = 3; i <= 5; i++) {
		fmt(path, sizeof(path), "%s/nodes/%d/properties", tt.root, i);
		assert_int_equal(chmod(path, 0), 0);
	}
	run_unprivileged(tt.root, check_peers_hidden);
	tmp_free(&tt);
}

/* EACCES outside a node directory is not a hidden GPU: it is an error. */
static int check_nodes_dir_denied(const char *root)
{
	struct kfd_topology t;
	char err[512] = "";
	int ret = 0;

	CHILD_CHECK(topo_load(root, &t, err, sizeof(err)) == -EACCES);
	CHILD_CHECK(strstr(err, "/nodes: ") != NULL);
	CHILD_CHECK(t.nodes == NULL && t.n_nodes == 0);
out:
	return ret;
}

static void test_nodes_dir_denied(void **state)
{
	struct tmp_tree tt;
	char path[4200];

	(void)state;
	tmp_copy(&tt, VEGA10, NULL);
	tpath(path, sizeof(path), &tt, "nodes");
	assert_int_equal(chmod(path, 0), 0);
	run_unprivileged(tt.root, check_nodes_dir_denied);
	tmp_free(&tt);
}

/* ---- API corners ---------------------------------------------------------------------------- */

static void test_api_corners(void **state)
{
	struct kfd_topology t;
	char err[512] = "x", small[8], path[4200];
	int ret;

	(void)state;
	/* no error buffer, or a tiny one: still the right code, no overflow */
	assert_int_equal(topo_load("/nonexistent/kfd/topology", &t, NULL, 0), -ENOENT);
	assert_int_equal(topo_load("/nonexistent/kfd/topology", &t, small, sizeof(small)), -ENOENT);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_int_equal(topo_load(NULL, NULL, err, sizeof(err)), -EINVAL);

	/* NULL root is the real sysfs: loads if this machine has KFD, else says where it looked */
	ret = topo_load(NULL, &t, err, sizeof(err));
	if (ret)
		assert_non_null(strstr(err, KFD_SYSFS_TOPOLOGY));
	else
		assert_true(t.n_nodes > 0);
	topo_free(&t);

	/* success clears the message */
	strcpy(err, "stale");
	fmt(path, sizeof(path), "%s/%s", fixtures_dir(), VEGA10);
	assert_int_equal(topo_load(path, &t, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	topo_free(&t);
	topo_free(&t); /* idempotent */
}

int main(void)
{
	struct CMUnitTest tests[64 + sizeof(bad_cases) / sizeof(bad_cases[0])];
	size_t n = 0;

	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_all_fixtures_match_files,
								  teardown_tmp);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_vega10, teardown_tmp);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_mi210, teardown_tmp);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_mi300x, teardown_tmp);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_mi308x, teardown_tmp);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_mi300a, teardown_tmp);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_workstation, teardown_tmp);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_mi100_node, teardown_tmp);
	tests[n++] =
		(struct CMUnitTest)cmocka_unit_test_teardown(test_rx7900_template, teardown_tmp);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_unknown_keys_ignored,
								  teardown_tmp);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_optional_files_missing,
								  teardown_tmp);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_edge_values, teardown_tmp);
	tests[n++] =
		(struct CMUnitTest)cmocka_unit_test_teardown(test_vram_mixed_heaps, teardown_tmp);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_link_dir_gaps, teardown_tmp);
	tests[n++] =
		(struct CMUnitTest)cmocka_unit_test_teardown(test_hidden_node_files, teardown_tmp);
	tests[n++] =
		(struct CMUnitTest)cmocka_unit_test_teardown(test_hidden_node_dir, teardown_tmp);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_hidden_node_late_file,
								  teardown_tmp);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_hidden_peers, teardown_tmp);
	tests[n++] =
		(struct CMUnitTest)cmocka_unit_test_teardown(test_nodes_dir_denied, teardown_tmp);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_api_corners, teardown_tmp);
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate_setup_teardown(
			test_bad_tree, NULL, teardown_tmp, (void *)&bad_cases[i]);
		tests[n++].name = bad_cases[i].name;
	}
	return _cmocka_run_group_tests("topo_load", tests, n, NULL, NULL);
}
