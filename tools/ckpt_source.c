// SPDX-License-Identifier: MIT
/*
 * The GPUs a checkpoint needs, as one matcher source: the union of the GPUs
 * of every process image and render image (keyed by the dump node's
 * gpu_id), in a topology merged from the images' recorded node sets. All
 * images come from one dump node, so a node index means the same node in
 * each of them; images that disagree are refused.
 */
#include <errno.h>
#include <stdlib.h>

#include "cli.h"
#include "ckpt.h"
#include "images/topology_image.h"

struct gpu_set {
	uint32_t *gpu_ids;
	uint32_t *nodes;
	size_t n, cap;
};

static int gpu_set_add(const char *cmd, struct gpu_set *s, uint32_t gpu_id, uint32_t node)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->gpu_ids[i] == gpu_id && s->nodes[i] == node)
			return 0;
		if (s->gpu_ids[i] == gpu_id || s->nodes[i] == node) {
			cli_err("%s: the images disagree: GPU %u is node %u in one and GPU %u is "
				"node %u in another",
				cmd, s->gpu_ids[i], s->nodes[i], gpu_id, node);
			return -EINVAL;
		}
	}
	if (s->n == s->cap) /* sized for every device of every image up front */
		return -ENOMEM;
	s->gpu_ids[s->n] = gpu_id;
	s->nodes[s->n++] = node;
	return 0;
}

static int collect_gpus(const char *cmd, const struct ckpt *ck, struct gpu_set *s)
{
	int ret = 0;

	for (size_t p = 0; p < ck->n_procs; p++) {
		const KfdProcessEntry *e = ck->procs[p].entry;

		for (size_t d = 0; !ret && d < e->n_devices; d++)
			ret = gpu_set_add(cmd, s, e->devices[d]->actual_gpu_id,
					  e->devices[d]->node_index);
	}
	for (size_t r = 0; !ret && r < ck->n_renders; r++)
		ret = gpu_set_add(cmd, s, ck->renders[r].entry->actual_gpu_id,
				  ck->renders[r].entry->node_index);
	return ret;
}

/* Adds the node entries of one image, first image wins; the same index must be the same GPU. */
static int merge_nodes(const char *cmd, const KfdTopologyEntry *t, KfdNodeEntry **out, size_t *n)
{
	for (size_t i = 0; i < t->n_nodes; i++) {
		KfdNodeEntry *ne = t->nodes[i];
		size_t j;

		for (j = 0; j < *n && out[j]->index != ne->index; j++)
			;
		if (j == *n) {
			out[(*n)++] = ne;
		} else if (out[j]->gpu_id != ne->gpu_id) {
			cli_err("%s: the images disagree about node %u (gpu_id %u and %u)", cmd,
				ne->index, out[j]->gpu_id, ne->gpu_id);
			return -EINVAL;
		}
	}
	return 0;
}

static size_t count_entries(const struct ckpt *ck, bool nodes)
{
	size_t n = 0;

	for (size_t p = 0; p < ck->n_procs; p++)
		n += nodes ? ck->procs[p].entry->topology->n_nodes : ck->procs[p].entry->n_devices;
	for (size_t r = 0; r < ck->n_renders; r++)
		n += nodes ? ck->renders[r].entry->topology->n_nodes : 1;
	return n;
}

static int merge_topology(const char *cmd, const struct ckpt *ck, struct kfd_topology *topo)
{
	KfdTopologyEntry merged = KFD_TOPOLOGY_ENTRY__INIT;
	KfdNodeEntry **nodes = calloc(count_entries(ck, true) + 1, sizeof(*nodes));
	char err[512];
	int ret = nodes ? 0 : -ENOMEM;

	for (size_t p = 0; !ret && p < ck->n_procs; p++)
		ret = merge_nodes(cmd, ck->procs[p].entry->topology, nodes, &merged.n_nodes);
	for (size_t r = 0; !ret && r < ck->n_renders; r++)
		ret = merge_nodes(cmd, ck->renders[r].entry->topology, nodes, &merged.n_nodes);
	if (ret == -ENOMEM)
		cli_err("%s: out of memory", cmd);
	if (!ret) {
		merged.nodes = nodes;
		ret = topo_from_image(&merged, topo, err, sizeof(err));
		if (ret)
			cli_err("%s: %s: recorded topologies: %s", cmd, ck->dir, err);
	}
	free(nodes);
	return ret;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

int ckpt_source_build(const char *cmd, const struct ckpt *ck, struct ckpt_source *src)
{
	size_t cap = count_entries(ck, false);
	struct gpu_set set = {.cap = cap};
	int ret;

	*src = (struct ckpt_source){0};
	set.gpu_ids = calloc(cap + 1, sizeof(*set.gpu_ids));
	set.nodes = calloc(cap + 1, sizeof(*set.nodes));
	ret = set.gpu_ids && set.nodes ? collect_gpus(cmd, ck, &set) : -ENOMEM;
	if (ret == -ENOMEM)
		cli_err("%s: out of memory", cmd);
	ret = ret ?: merge_topology(cmd, ck, &src->topo);
	free(set.gpu_ids);
	if (ret) {
		free(set.nodes);
		ckpt_source_free(src);
		return ret;
	}
	qsort(set.nodes, set.n, sizeof(*set.nodes), cmp_u32);
	src->nodes = set.nodes;
	src->n_nodes = set.n;
	return 0;
}

void ckpt_source_free(struct ckpt_source *src)
{
	topo_free(&src->topo);
	free(src->nodes);
	*src = (struct ckpt_source){0};
}
