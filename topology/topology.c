// SPDX-License-Identifier: MIT
/*
 * Queries on a loaded KFD topology model (see topology.h). Reading sysfs is
 * parse.c's job; this file only looks things up.
 */
#include <stdlib.h>

#include "topology/topology.h"

static const char *const prop_names[KFD_PROP__COUNT] = {
#define KFD_PROP_NAME(name) [KFD_PROP_##name] = #name,
	KFD_NODE_PROPS(KFD_PROP_NAME)
#undef KFD_PROP_NAME
};

const char *kfd_prop_name(enum kfd_prop p)
{
	return (unsigned int)p < KFD_PROP__COUNT ? prop_names[p] : "?";
}

uint64_t kfd_prop_get(const struct kfd_node *n, enum kfd_prop p)
{
	switch (p) {
#define KFD_PROP_CASE(name)                                                                        \
	case KFD_PROP_##name:                                                                      \
		return n->props.name;
		KFD_NODE_PROPS(KFD_PROP_CASE)
#undef KFD_PROP_CASE
	default:
		return 0;
	}
}

const struct kfd_node *topo_node(const struct kfd_topology *topo, uint32_t index)
{
	return index < topo->n_nodes ? &topo->nodes[index] : NULL;
}

const struct kfd_node *topo_gpu_by_id(const struct kfd_topology *topo, uint32_t gpu_id)
{
	if (!gpu_id)
		return NULL;
	for (size_t i = 0; i < topo->n_nodes; i++)
		if (topo->nodes[i].is_gpu && topo->nodes[i].gpu_id == gpu_id)
			return &topo->nodes[i];
	return NULL;
}

static const struct kfd_link *find_link(const struct kfd_link *links, size_t n, uint32_t to)
{
	for (size_t i = 0; i < n; i++)
		if (links[i].node_to == to)
			return &links[i];
	return NULL;
}

const struct kfd_link *topo_io_link(const struct kfd_node *from, uint32_t to)
{
	return find_link(from->io_links, from->n_io_links, to);
}

const struct kfd_link *topo_p2p_link(const struct kfd_node *from, uint32_t to)
{
	return find_link(from->p2p_links, from->n_p2p_links, to);
}

int topo_gpu_cpu_node(const struct kfd_topology *topo, const struct kfd_node *gpu)
{
	const struct kfd_link *best = NULL;

	for (size_t i = 0; i < gpu->n_io_links; i++) {
		const struct kfd_link *l = &gpu->io_links[i];
		const struct kfd_node *to = topo_node(topo, l->node_to);

		if (!to || to->is_gpu)
			continue;
		if (!best || l->weight < best->weight)
			best = l;
	}
	return best ? (int)best->node_to : -1;
}

bool topo_gpu_cpu_visible(const struct kfd_topology *topo, const struct kfd_node *gpu)
{
	for (size_t i = 0; i < topo->n_nodes; i++) {
		const struct kfd_node *n = &topo->nodes[i];

		if (n->is_gpu || n == gpu)
			continue;
		if (topo_io_link(n, gpu->index))
			return true;
	}
	return false;
}

void topo_free(struct kfd_topology *topo)
{
	if (!topo)
		return;
	for (size_t i = 0; i < topo->n_nodes; i++) {
		free(topo->nodes[i].mem_banks);
		free(topo->nodes[i].io_links);
		free(topo->nodes[i].p2p_links);
	}
	free(topo->nodes);
	topo->nodes = NULL;
	topo->n_nodes = 0;
}
