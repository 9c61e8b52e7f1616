// SPDX-License-Identifier: MIT
/*
 * topo_to_image() / topo_from_image(): round trips of the real captures
 * (whole and subsets) through the protobuf wire format, and images that are
 * malformed on purpose, built in memory or by corrupting packed bytes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "images/topology_image.h"
#include "topology/topology.h"
#include "tests/unit/fixtures.h"

static void load_fixture(const char *name, struct kfd_topology *t)
{
	char root[4096], err[512] = "";
	int ret;

	fixture_path(root, sizeof(root), name);
	ret = topo_load(root, t, err, sizeof(err));
	if (ret)
		print_error("topo_load(%s) = %d: %s\n", root, ret, err);
	assert_int_equal(ret, 0);
}

/* Image -> bytes -> image -> model, as a dump and a restore would do it. */
static void through_wire(const KfdTopologyEntry *e, struct kfd_topology *out)
{
	size_t len = kfd_topology_entry__get_packed_size(e);
	uint8_t *buf = malloc(len ? len : 1);
	KfdTopologyEntry *back;
	char err[512] = "";
	int ret;

	assert_non_null(buf);
	assert_int_equal(kfd_topology_entry__pack(e, buf), len);
	back = kfd_topology_entry__unpack(NULL, len, buf);
	assert_non_null(back);
	ret = topo_from_image(back, out, err, sizeof(err));
	if (ret)
		print_error("topo_from_image = %d: %s\n", ret, err);
	assert_int_equal(ret, 0);
	assert_string_equal(err, "");
	kfd_topology_entry__free_unpacked(back, NULL);
	free(buf);
}

static void assert_links_equal(const struct kfd_link *a, size_t na, const struct kfd_link *b,
			       size_t nb)
{
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		assert_int_equal(a[i].type, b[i].type);
		assert_int_equal(a[i].node_from, b[i].node_from);
		assert_int_equal(a[i].node_to, b[i].node_to);
		assert_int_equal(a[i].weight, b[i].weight);
		assert_int_equal(a[i].flags, b[i].flags);
		assert_int_equal(a[i].min_bandwidth, b[i].min_bandwidth);
		assert_int_equal(a[i].max_bandwidth, b[i].max_bandwidth);
	}
}

/* Everything an image keeps; mem_banks are reduced to the VRAM summary. */
static void assert_node_kept(const struct kfd_node *orig, const struct kfd_node *got)
{
	assert_int_equal(got->index, orig->index);
	assert_true(got->accessible);
	assert_int_equal(got->is_gpu, orig->is_gpu);
	assert_int_equal(got->gpu_id, orig->gpu_id);
	assert_string_equal(got->name, orig->name);
	assert_int_equal(got->props.present, orig->props.present);
	for (int p = 0; p < KFD_PROP__COUNT; p++)
		assert_int_equal(kfd_prop_get(got, (enum kfd_prop)p),
				 kfd_prop_get(orig, (enum kfd_prop)p));
	assert_int_equal(got->vram_size, orig->vram_size);
	assert_int_equal(got->vram_heap_type, orig->vram_heap_type);
	assert_int_equal(got->n_caches, orig->n_caches);
	assert_int_equal(got->n_mem_banks, 0);
	assert_null(got->mem_banks);
	assert_links_equal(orig->io_links, orig->n_io_links, got->io_links, got->n_io_links);
	assert_links_equal(orig->p2p_links, orig->n_p2p_links, got->p2p_links, got->n_p2p_links);
}

static void assert_node_absent(const struct kfd_node *n, uint32_t index)
{
	assert_int_equal(n->index, index);
	assert_false(n->accessible);
	assert_true(n->is_gpu);
	assert_int_equal(n->gpu_id, 0);
	assert_int_equal(n->props.present, 0);
	assert_int_equal(n->n_io_links + n->n_p2p_links + n->n_mem_banks + n->n_caches, 0);
	assert_string_equal(n->name, "");
}

static void test_round_trip_whole(void **state)
{
	(void)state;
	for (size_t f = 0; f < sizeof(fixture_full_trees) / sizeof(fixture_full_trees[0]); f++) {
		struct kfd_topology t, back;
		KfdTopologyEntry *e;

		load_fixture(fixture_full_trees[f], &t);
		assert_int_equal(topo_to_image(&t, NULL, 0, &e), 0);
		assert_int_equal(e->n_nodes, t.n_nodes);
		assert_int_equal(e->has_generation_id, t.has_generation_id);
		through_wire(e, &back);
		assert_int_equal(back.n_nodes, t.n_nodes);
		assert_int_equal(back.has_generation_id, t.has_generation_id);
		assert_int_equal(back.generation_id, t.generation_id);
		for (size_t i = 0; i < t.n_nodes; i++)
			assert_node_kept(&t.nodes[i], &back.nodes[i]);
		topo_image_free(e);
		topo_free(&back);
		topo_free(&t);
	}
}

/* The image of one GPU of a hive: its own CPU link must still be the CPU link. */
static void test_subset_one_gpu(void **state)
{
	static const uint32_t pick[] = {3};
	struct kfd_topology t, back;
	KfdTopologyEntry *e;

	(void)state;
	load_fixture(MI210, &t);
	assert_int_equal(topo_to_image(&t, pick, 1, &e), 0);
	assert_int_equal(e->n_nodes, 3);
	assert_int_equal(e->nodes[0]->index, 0);
	assert_int_equal(e->nodes[1]->index, 1);
	assert_int_equal(e->nodes[2]->index, 3);
	through_wire(e, &back);
	assert_int_equal(back.n_nodes, 4);
	assert_node_kept(&t.nodes[0], &back.nodes[0]);
	assert_node_kept(&t.nodes[1], &back.nodes[1]);
	assert_node_absent(&back.nodes[2], 2);
	assert_node_kept(&t.nodes[3], &back.nodes[3]);
	/* links to the unrecorded hive peers 2, 4, 5 are kept as they were */
	assert_int_equal(back.nodes[3].n_io_links, 4);
	assert_non_null(topo_io_link(&back.nodes[3], 5));
	assert_int_equal(topo_gpu_cpu_node(&back, &back.nodes[3]), 0);
	assert_int_equal(topo_gpu_cpu_node(&t, &t.nodes[3]), 0);
	assert_null(topo_gpu_by_id(&back, 0));
	topo_image_free(e);
	topo_free(&back);
	topo_free(&t);
}

static void test_subset_partitions(void **state)
{
	static const uint32_t pick[] = {20, 2};
	struct kfd_topology t, back;
	KfdTopologyEntry *e;
	size_t recorded = 0;

	(void)state;
	load_fixture(MI308X, &t);
	assert_int_equal(topo_to_image(&t, pick, 2, &e), 0);
	assert_int_equal(e->n_nodes, 4); /* CPU nodes 0, 1 and the two GPUs, in index order */
	assert_int_equal(e->nodes[3]->index, 20);
	through_wire(e, &back);
	assert_int_equal(back.n_nodes, 21);
	for (uint32_t i = 0; i < 21; i++) {
		if (i <= 2 || i == 20) {
			assert_node_kept(&t.nodes[i], &back.nodes[i]);
			recorded += back.nodes[i].is_gpu;
		} else {
			assert_node_absent(&back.nodes[i], i);
		}
	}
	assert_int_equal(recorded, 2);
	assert_ptr_equal(topo_gpu_by_id(&back, 24248), &back.nodes[2]);
	assert_ptr_equal(topo_gpu_by_id(&back, t.nodes[20].gpu_id), &back.nodes[20]);
	assert_int_equal(topo_gpu_cpu_node(&back, &back.nodes[20]), 1);
	assert_int_equal(topo_io_link(&back.nodes[2], 20)->weight,
			 topo_io_link(&t.nodes[2], 20)->weight);
	topo_image_free(e);
	topo_free(&back);
	topo_free(&t);
}

static void test_subset_cpus_only(void **state)
{
	static const uint32_t pick[] = {1};
	struct kfd_topology t, back;
	KfdTopologyEntry *e;

	(void)state;
	load_fixture(MI300A, &t);
	/* an empty list: just the CPU nodes */
	assert_int_equal(topo_to_image(&t, pick, 0, &e), 0);
	assert_int_equal(e->n_nodes, 4);
	topo_image_free(e);
	/* a CPU node may be listed: it is kept once */
	assert_int_equal(topo_to_image(&t, pick, 1, &e), 0);
	assert_int_equal(e->n_nodes, 4);
	through_wire(e, &back);
	assert_int_equal(back.n_nodes, 4);
	for (size_t i = 0; i < 4; i++)
		assert_node_kept(&t.nodes[i], &back.nodes[i]);
	topo_image_free(e);
	topo_free(&back);
	topo_free(&t);
}

static void test_to_image_errors(void **state)
{
	static const uint32_t out_of_range[] = {2, 10};
	static const uint32_t twice[] = {2, 3, 2};
	static const uint32_t hidden[] = {4};
	struct kfd_topology t;
	KfdTopologyEntry *e = (KfdTopologyEntry *)&e;

	(void)state;
	load_fixture(MI210, &t);
	assert_int_equal(topo_to_image(&t, out_of_range, 2, &e), -EINVAL);
	assert_null(e);
	assert_int_equal(topo_to_image(&t, twice, 3, &e), -EINVAL);
	assert_null(e);
	assert_int_equal(topo_to_image(NULL, NULL, 0, &e), -EINVAL);
	assert_int_equal(topo_to_image(&t, NULL, 0, NULL), -EINVAL);

	/* a GPU the reader could not see has nothing to record */
	topo_free(&t);
	load_fixture(MI210, &t);
	free(t.nodes[4].io_links);
	free(t.nodes[4].p2p_links);
	t.nodes[4] = (struct kfd_node){.index = 4, .is_gpu = true};
	assert_int_equal(topo_to_image(&t, hidden, 1, &e), -EINVAL);
	assert_null(e);
	/* ...and a whole-topology image leaves it out, which reads back the same way */
	assert_int_equal(topo_to_image(&t, NULL, 0, &e), 0);
	assert_int_equal(e->n_nodes, 9);
	{
		struct kfd_topology back;

		through_wire(e, &back);
		assert_int_equal(back.n_nodes, 10);
		assert_node_absent(&back.nodes[4], 4);
		assert_node_kept(&t.nodes[9], &back.nodes[9]);
		topo_free(&back);
	}
	topo_image_free(e);
	topo_image_free(NULL);
	topo_free(&t);
}

/* ---- hostile images ---------------------------------------------------------------------- */

/* A small valid image in caller storage, to be broken one field at a time. */
struct img {
	KfdTopologyEntry top;
	KfdNodeEntry node[3], *nodes[3];
	KfdPropEntry prop[3], *props[3];
	KfdLinkEntry link[2], *links[2];
};

static void img_init(struct img *m)
{
	static const char *const keys[] = {"simd_count", "device_id", "drm_render_minor"};
	static const uint64_t vals[] = {416, 29711, 128};

	memset(m, 0, sizeof(*m));
	kfd_topology_entry__init(&m->top);
	for (int i = 0; i < 3; i++) {
		kfd_node_entry__init(&m->node[i]);
		m->node[i].index = (uint32_t)i;
		m->nodes[i] = &m->node[i];
		kfd_prop_entry__init(&m->prop[i]);
		m->prop[i].key = (char *)keys[i];
		m->prop[i].value = vals[i];
		m->props[i] = &m->prop[i];
	}
	for (int i = 0; i < 2; i++) {
		kfd_link_entry__init(&m->link[i]);
		m->link[i].type = i ? KFD_IOLINK_XGMI : KFD_IOLINK_PCIEXPRESS;
		m->link[i].node_from = 2;
		m->link[i].node_to = i ? 7 : 0;
		m->link[i].weight = i ? 15 : 20;
		m->links[i] = &m->link[i];
	}
	m->top.n_nodes = 3;
	m->top.nodes = m->nodes;
	m->node[2].index = 2;
	m->node[2].gpu_id = 4660;
	m->node[2].name = (char *)"aldebaran";
	m->node[2].n_props = 3;
	m->node[2].props = m->props;
	m->node[2].n_io_links = 2;
	m->node[2].io_links = m->links;
	m->node[2].has_vram_heap_type = true;
	m->node[2].vram_heap_type = KFD_HEAP_FB_PRIVATE;
	m->node[2].has_vram_size = true;
	m->node[2].vram_size = 64ULL << 30;
}

static void test_in_memory_image_ok(void **state)
{
	struct kfd_topology t;
	struct img m;

	(void)state;
	img_init(&m);
	m.prop[1].key = (char *)"a_key_from_a_newer_kernel";
	assert_int_equal(topo_from_image(&m.top, &t, NULL, 0), 0);
	assert_int_equal(t.n_nodes, 3);
	assert_true(t.nodes[2].is_gpu);
	assert_false(t.nodes[0].is_gpu); /* recorded, without simd_count */
	assert_true(t.nodes[0].accessible);
	assert_int_equal(t.nodes[2].gpu_id, 4660);
	assert_string_equal(t.nodes[2].name, "aldebaran");
	assert_false(kfd_prop_present(&t.nodes[2], KFD_PROP_device_id));
	assert_int_equal(t.nodes[2].props.drm_render_minor, 128);
	assert_int_equal(t.nodes[2].vram_heap_type, KFD_HEAP_FB_PRIVATE);
	/* a link to a node the image does not have is kept */
	assert_int_equal(t.nodes[2].io_links[1].node_to, 7);
	assert_null(topo_node(&t, 7));
	assert_int_equal(topo_gpu_cpu_node(&t, &t.nodes[2]), 0);
	assert_false(t.has_generation_id);
	topo_free(&t);

	/* indexes in any order, with gaps */
	img_init(&m);
	m.node[0].index = 9;
	assert_int_equal(topo_from_image(&m.top, &t, NULL, 0), 0);
	assert_int_equal(t.n_nodes, 10);
	assert_true(t.nodes[9].accessible);
	assert_false(t.nodes[0].accessible);
	assert_true(t.nodes[0].is_gpu);
	topo_free(&t);

	/* 63 bytes of name is the most the model holds */
	img_init(&m);
	m.node[2].name = (char *)"123456789012345678901234567890123456789012345678901234567890123";
	assert_int_equal(topo_from_image(&m.top, &t, NULL, 0), 0);
	assert_int_equal(strlen(t.nodes[2].name), 63);
	topo_free(&t);
}

struct bad_image {
	const char *name;
	void (*apply)(struct img *m);
	const char *expect;
};

static void no_nodes(struct img *m)
{
	m->top.n_nodes = 0;
}

static void too_many_nodes(struct img *m)
{
	m->top.n_nodes = TOPO_IMAGE_MAX_NODES + 1; /* never read beyond the count check */
}

static void null_node_list(struct img *m)
{
	m->top.nodes = NULL;
}

static void null_node(struct img *m)
{
	m->nodes[1] = NULL;
}

static void huge_index(struct img *m)
{
	m->node[1].index = UINT32_MAX;
}

static void index_at_limit(struct img *m)
{
	m->node[1].index = TOPO_IMAGE_MAX_NODES;
}

static void duplicate_index(struct img *m)
{
	m->node[0].index = 2;
}

static void long_name(struct img *m)
{
	m->node[2].name =
		(char *)"1234567890123456789012345678901234567890123456789012345678901234";
}

static void null_prop_list(struct img *m)
{
	m->node[2].props = NULL;
}

static void null_prop(struct img *m)
{
	m->props[1] = NULL;
}

static void null_prop_key(struct img *m)
{
	m->prop[0].key = NULL;
}

static void duplicate_prop(struct img *m)
{
	m->prop[2].key = (char *)"simd_count";
}

static void too_many_props(struct img *m)
{
	m->node[2].n_props = TOPO_IMAGE_MAX_PROPS + 1;
}

static void bad_heap_type(struct img *m)
{
	m->node[2].vram_heap_type = 3;
}

static void too_many_caches(struct img *m)
{
	m->node[2].has_caches_found = true;
	m->node[2].caches_found = UINT32_MAX;
}

static void null_link_list(struct img *m)
{
	m->node[2].io_links = NULL;
}

static void null_link(struct img *m)
{
	m->links[1] = NULL;
}

static void link_to_far_node(struct img *m)
{
	m->link[1].node_to = TOPO_IMAGE_MAX_NODES;
}

static void link_from_far_node(struct img *m)
{
	m->link[0].node_from = UINT32_MAX;
}

static void too_many_links(struct img *m)
{
	m->node[2].n_p2p_links = TOPO_IMAGE_MAX_LINKS + 1;
	m->node[2].p2p_links = m->links;
}

#define BAD(fn, expect)                                                                            \
	{                                                                                          \
#fn, fn, expect                                                                    \
	}

static const struct bad_image bad_images[] = {
	BAD(no_nodes, "no nodes"),
	BAD(too_many_nodes, "4097 nodes"),
	BAD(null_node_list, "node list missing"),
	BAD(null_node, "node entry 1 missing"),
	BAD(huge_index, "node index 4294967295 out of range"),
	BAD(index_at_limit, "node index 4096 out of range"),
	BAD(duplicate_index, "node 2 appears twice"),
	BAD(long_name, "node 2: name longer than 63"),
	BAD(null_prop_list, "node 2: property list missing"),
	BAD(null_prop, "node 2: property 1 missing"),
	BAD(null_prop_key, "node 2: property 0 missing"),
	BAD(duplicate_prop, "node 2: duplicate property simd_count"),
	BAD(too_many_props, "node 2: 1025 properties"),
	BAD(bad_heap_type, "node 2: VRAM heap type 3"),
	BAD(too_many_caches, "node 2: 4294967295 caches"),
	BAD(null_link_list, "node 2: io_links list missing"),
	BAD(null_link, "node 2: io_links entry 1 missing"),
	BAD(link_to_far_node, "node 2: io_links entry 1: node 2 -> 4096 out of range"),
	BAD(link_from_far_node, "node 2: io_links entry 0: node 4294967295 -> 0 out of range"),
	BAD(too_many_links, "node 2: 4097 p2p_links"),
};

static void test_bad_image(void **state)
{
	const struct bad_image *b = *state;
	struct kfd_topology t;
	char err[512] = "";
	struct img m;

	img_init(&m);
	b->apply(&m);
	memset(&t, 0x5a, sizeof(t));
	assert_int_equal(topo_from_image(&m.top, &t, err, sizeof(err)), -EINVAL);
	print_message("# %s\n", err);
	assert_non_null(strstr(err, b->expect));
	assert_null(strchr(err, '\n'));
	assert_null(t.nodes);
	assert_int_equal(t.n_nodes, 0);
	topo_free(&t);
}

static void test_null_arguments(void **state)
{
	struct kfd_topology t;
	struct img m;
	char err[64];

	(void)state;
	img_init(&m);
	assert_int_equal(topo_from_image(NULL, &t, err, sizeof(err)), -EINVAL);
	assert_int_not_equal(err[0], '\0');
	assert_int_equal(topo_from_image(&m.top, NULL, NULL, 0), -EINVAL);
}

/*
 * Corrupted wire bytes: whatever protobuf-c accepts, topo_from_image() either
 * reads or refuses, without touching memory it should not (ASan build).
 */
static void test_corrupted_bytes(void **state)
{
	static const uint32_t pick[] = {2, 6};
	struct kfd_topology t, back;
	KfdTopologyEntry *e, *u;
	uint8_t *buf, *bad;
	uint32_t rng = 12345;
	size_t len, accepted = 0, refused = 0;

	(void)state;
	load_fixture(MI210, &t);
	assert_int_equal(topo_to_image(&t, pick, 2, &e), 0);
	len = kfd_topology_entry__get_packed_size(e);
	buf = malloc(len);
	bad = malloc(len);
	assert_non_null(buf);
	assert_non_null(bad);
	kfd_topology_entry__pack(e, buf);
	for (int iter = 0; iter < 3000; iter++) {
		size_t cut = len;

		memcpy(bad, buf, len);
		for (int k = 0; k < 1 + iter % 4; k++) {
			rng = rng * 1103515245 + 12345;
			bad[(rng >> 8) % len] ^= (uint8_t)(1u << (rng % 8));
		}
		if (iter % 5 == 0)
			cut = (rng >> 4) % len;
		u = kfd_topology_entry__unpack(NULL, cut, bad);
		if (!u)
			continue;
		if (topo_from_image(u, &back, NULL, 0) == 0) {
			accepted++;
			assert_true(back.n_nodes > 0 && back.n_nodes <= TOPO_IMAGE_MAX_NODES);
			topo_free(&back);
		} else {
			refused++;
			assert_null(back.nodes);
		}
		kfd_topology_entry__free_unpacked(u, NULL);
	}
	print_message("# corrupted images: %zu read, %zu refused by topo_from_image\n", accepted,
		      refused);
	assert_true(accepted > 0);
	free(bad);
	free(buf);
	topo_image_free(e);
	topo_free(&t);
}

int main(void)
{
	struct CMUnitTest tests[16 + sizeof(bad_images) / sizeof(bad_images[0])];
	size_t n = 0;

	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_round_trip_whole);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_subset_one_gpu);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_subset_partitions);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_subset_cpus_only);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_to_image_errors);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_in_memory_image_ok);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_null_arguments);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_corrupted_bytes);
	for (size_t i = 0; i < sizeof(bad_images) / sizeof(bad_images[0]); i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_bad_image,
									(void *)&bad_images[i]);
		tests[n++].name = bad_images[i].name;
	}
	return _cmocka_run_group_tests("topology_image", tests, n, NULL, NULL);
}
