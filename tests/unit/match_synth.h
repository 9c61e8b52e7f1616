/* SPDX-License-Identifier: MIT */
/*
 * Synthetic KFD topologies for matcher tests, built in memory with the
 * shapes the real captures show (docs/kfd-topology-facts.md): CPU nodes
 * first, GPUs with a PCIe link to their CPU, CPU->GPU links for large-BAR
 * GPUs, xGMI cliques for hives, partitions sharing unique_id.
 * Everything is static inline so each test program uses what it needs.
 */
#ifndef MATCH_SYNTH_H
#define MATCH_SYNTH_H

#include <stdlib.h>
#include <string.h>

#include "topology/match.h"

#define SYNTH_SET(node, key, value)                                                                \
	do {                                                                                       \
		(node)->props.key = (value);                                                       \
		(node)->props.present |= 1ULL << KFD_PROP_##key;                                   \
	} while (0)

#define SYNTH_UNSET(node, key)                                                                     \
	do {                                                                                       \
		(node)->props.key = 0;                                                             \
		(node)->props.present &= ~(1ULL << KFD_PROP_##key);                                \
	} while (0)

#define SYNTH_GIB (1024ULL * 1024 * 1024)

#define assert_contains(s, sub)                                                                    \
	do {                                                                                       \
		if (!strstr((s), (sub)))                                                           \
			fail_msg("\"%s\" does not contain \"%s\"", (s), (sub));                    \
	} while (0)

static inline struct kfd_topology *synth_new(size_t n_nodes)
{
	struct kfd_topology *t = calloc(1, sizeof(*t));

	if (!t)
		abort();
	t->nodes = calloc(n_nodes, sizeof(*t->nodes));
	if (!t->nodes)
		abort();
	t->n_nodes = n_nodes;
	for (size_t i = 0; i < n_nodes; i++) {
		t->nodes[i].index = (uint32_t)i;
		t->nodes[i].accessible = true;
	}
	return t;
}

static inline void synth_free(struct kfd_topology *t)
{
	if (!t)
		return;
	topo_free(t);
	free(t);
}

static inline void synth_add_link(struct kfd_link **links, size_t *n, uint32_t from, uint32_t to,
				  uint32_t type, uint32_t weight)
{
	struct kfd_link *l = realloc(*links, (*n + 1) * sizeof(**links));

	if (!l)
		abort();
	l[*n] = (struct kfd_link){.type = type, .node_from = from, .node_to = to, .weight = weight};
	*links = l;
	(*n)++;
}

static inline void synth_io(struct kfd_topology *t, uint32_t from, uint32_t to, uint32_t type,
			    uint32_t weight)
{
	struct kfd_node *n = &t->nodes[from];

	synth_add_link(&n->io_links, &n->n_io_links, from, to, type, weight);
}

static inline void synth_p2p(struct kfd_topology *t, uint32_t from, uint32_t to, uint32_t type,
			     uint32_t weight)
{
	struct kfd_node *n = &t->nodes[from];

	synth_add_link(&n->p2p_links, &n->n_p2p_links, from, to, type, weight);
}

static inline struct kfd_node *synth_cpu(struct kfd_topology *t, uint32_t idx)
{
	struct kfd_node *n = &t->nodes[idx];

	SYNTH_SET(n, cpu_cores_count, 64);
	SYNTH_SET(n, simd_count, 0);
	return n;
}

/* An MI210-like GPU (gfx90a, 64 GiB public VRAM) with a PCIe link to `cpu`. */
static inline struct kfd_node *synth_gpu(struct kfd_topology *t, uint32_t idx, uint32_t gpu_id,
					 uint32_t cpu, bool large_bar)
{
	struct kfd_node *n = &t->nodes[idx];

	n->is_gpu = true;
	n->gpu_id = gpu_id;
	SYNTH_SET(n, simd_count, 416);
	SYNTH_SET(n, array_count, 8);
	SYNTH_SET(n, simd_arrays_per_engine, 1);
	SYNTH_SET(n, cu_per_simd_array, 13);
	SYNTH_SET(n, simd_per_cu, 4);
	SYNTH_SET(n, max_waves_per_simd, 8);
	SYNTH_SET(n, lds_size_in_kb, 64);
	SYNTH_SET(n, wave_front_size, 64);
	SYNTH_SET(n, max_slots_scratch_cu, 32);
	SYNTH_SET(n, gfx_target_version, 90010);
	SYNTH_SET(n, vendor_id, 4098);
	SYNTH_SET(n, device_id, 29711);
	SYNTH_SET(n, num_sdma_engines, 2);
	SYNTH_SET(n, num_sdma_xgmi_engines, 6);
	SYNTH_SET(n, num_sdma_queues_per_engine, 8);
	SYNTH_SET(n, num_cp_queues, 24);
	SYNTH_SET(n, caches_count, 66);
	SYNTH_SET(n, num_gws, 64);
	SYNTH_SET(n, fw_version, 92);
	SYNTH_SET(n, sdma_fw_version, 9);
	SYNTH_SET(n, capability, 746037888);
	SYNTH_SET(n, num_xcc, 1);
	SYNTH_SET(n, drm_render_minor, 128 + idx);
	SYNTH_SET(n, location_id, 0x100u * (idx + 1));
	SYNTH_SET(n, domain, 0);
	SYNTH_SET(n, unique_id, 0x1000 + idx);
	SYNTH_SET(n, hive_id, 0);
	n->vram_size = 64 * SYNTH_GIB;
	n->vram_heap_type = large_bar ? KFD_HEAP_FB_PUBLIC : KFD_HEAP_FB_PRIVATE;
	synth_io(t, idx, cpu, KFD_IOLINK_PCIEXPRESS, 20);
	if (large_bar)
		synth_io(t, cpu, idx, KFD_IOLINK_PCIEXPRESS, 20);
	return n;
}

/* Full xGMI mesh among nodes first..first+count-1, all in one hive. */
static inline void synth_hive(struct kfd_topology *t, uint32_t first, uint32_t count,
			      uint64_t hive_id, uint32_t weight)
{
	for (uint32_t a = first; a < first + count; a++) {
		SYNTH_SET(&t->nodes[a], hive_id, hive_id);
		for (uint32_t b = first; b < first + count; b++)
			if (a != b)
				synth_io(t, a, b, KFD_IOLINK_XGMI, weight);
	}
}

/*
 * The MI210 box of the fixtures: CPUs 0 and 1; hive A = nodes 2-5 on CPU 0,
 * hive B = nodes 6-9 on CPU 1; PCIe peer paths (p2p weight 72) across
 * hives. gpu_id of node i is id_base + i.
 */
static inline struct kfd_topology *synth_two_hives(uint32_t id_base)
{
	struct kfd_topology *t = synth_new(10);

	synth_cpu(t, 0);
	synth_cpu(t, 1);
	synth_io(t, 0, 1, KFD_IOLINK_HYPERTRANSPORT, 32);
	synth_io(t, 1, 0, KFD_IOLINK_HYPERTRANSPORT, 32);
	for (uint32_t i = 2; i < 10; i++)
		synth_gpu(t, i, id_base + i, i < 6 ? 0 : 1, true);
	synth_hive(t, 2, 4, 0xa1, 15);
	synth_hive(t, 6, 4, 0xb2, 15);
	for (uint32_t a = 2; a < 10; a++)
		for (uint32_t b = 2; b < 10; b++)
			if ((a < 6) != (b < 6))
				synth_p2p(t, a, b, KFD_IOLINK_PCIEXPRESS, 72);
	return t;
}

/*
 * A partitioned box like the MI308X capture: CPUs 0 and 1, `gpus` physical
 * GPUs of `parts` partitions each (half on each CPU), one hive; partitions
 * of one GPU share unique_id and are linked by xGMI weight 13, partitions of
 * different GPUs by xGMI weight 41. gpu_id of node i is id_base + i.
 */
static inline struct kfd_topology *synth_partitions(uint32_t gpus, uint32_t parts, uint32_t id_base)
{
	uint32_t n_gpu = gpus * parts;
	struct kfd_topology *t = synth_new(2 + n_gpu);

	synth_cpu(t, 0);
	synth_cpu(t, 1);
	for (uint32_t i = 0; i < n_gpu; i++) {
		uint32_t idx = 2 + i, phys = i / parts;
		struct kfd_node *n =
			synth_gpu(t, idx, id_base + idx, phys < gpus / 2 ? 0 : 1, true);

		SYNTH_SET(n, simd_count, 80);
		SYNTH_SET(n, unique_id, 0x5000 + phys);
		SYNTH_SET(n, location_id, 0x1000u * (phys + 1) + i % parts);
		SYNTH_SET(n, drm_render_minor, 128 + 8 * phys + i % parts);
		SYNTH_SET(n, hive_id, 0xc3);
	}
	for (uint32_t a = 0; a < n_gpu; a++)
		for (uint32_t b = 0; b < n_gpu; b++)
			if (a != b)
				synth_io(t, 2 + a, 2 + b, KFD_IOLINK_XGMI,
					 a / parts == b / parts ? 13 : 41);
	return t;
}

static inline struct match_request synth_request(const struct kfd_topology *src,
						 const struct kfd_topology *dst)
{
	struct match_request req = {.src = src, .dst = dst};

	match_checks_default(&req.checks);
	return req;
}

/* Destination node of source node `src_node` in a result, or -1. */
static inline int synth_dst_of(const struct match_result *res, uint32_t src_node)
{
	for (size_t i = 0; i < res->n_map; i++)
		if (res->map[i].src_node == src_node)
			return (int)res->map[i].dst_node;
	return -1;
}

#endif
