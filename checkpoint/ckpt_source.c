// SPDX-License-Identifier: MIT
/*
 * The GPUs a checkpoint needs, as one matcher source (ckpt.h): the union of
 * the GPUs of every process image and render image (keyed by the dump
 * node's gpu_id), in a topology merged from the images' recorded node sets.
 * All images come from one dump node, so a node index means the same node
 * in each of them; images that disagree are refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "checkpoint/ckpt.h"
#include "common/errmsg.h"
#include "images/topology_image.h"

/* An image of the directory by its position: processes first, then render files. */
static void image_file(const struct ckpt *ck, size_t image, char *buf, size_t len)
{
	if (image < ck->n_procs)
		kfd_image_name(buf, len, KFD_IMAGE_PROCESS, ck->procs[image].id);
	else
		kfd_image_name(buf, len, KFD_IMAGE_RENDER, ck->renders[image - ck->n_procs].id);
}

/* Two images that disagree, both files named. */
static int disagree(const struct ckpt *ck, size_t a, size_t b, const char *what, char *err,
		    size_t errlen)
{
	char fa[KFD_IMAGE_NAME_MAX], fb[KFD_IMAGE_NAME_MAX];

	image_file(ck, a, fa, sizeof(fa));
	image_file(ck, b, fb, sizeof(fb));
	return errmsg_set(err, errlen, -EINVAL,
			  "%s and %s disagree %s (images of different dumps?)", fa, fb, what);
}

struct gpu_set {
	uint32_t *gpu_ids;
	uint32_t *nodes;
	size_t *images; /* where each came from first */
	size_t n, cap;
};

static int gpu_set_add(const struct ckpt *ck, struct gpu_set *s, size_t image, uint32_t gpu_id,
		       uint32_t node, char *err, size_t errlen)
{
	char what[128];

	for (size_t i = 0; i < s->n; i++) {
		if (s->gpu_ids[i] == gpu_id && s->nodes[i] == node)
			return 0;
		if (s->gpu_ids[i] == gpu_id || s->nodes[i] == node) {
			snprintf(what, sizeof(what),
				 "(GPU %u is node %u in the first, GPU %u node %u in the second)",
				 s->gpu_ids[i], s->nodes[i], gpu_id, node);
			return disagree(ck, s->images[i], image, what, err, errlen);
		}
	}
	if (s->n == s->cap) /* sized for every device of every image up front */
		return -ENOMEM;
	s->gpu_ids[s->n] = gpu_id;
	s->images[s->n] = image;
	s->nodes[s->n++] = node;
	return 0;
}

static int collect_gpus(const struct ckpt *ck, struct gpu_set *s, char *err, size_t errlen)
{
	int ret = 0;

	for (size_t p = 0; p < ck->n_procs; p++) {
		const KfdProcessEntry *e = ck->procs[p].entry;

		for (size_t d = 0; !ret && d < e->n_devices; d++)
			ret = gpu_set_add(ck, s, p, e->devices[d]->actual_gpu_id,
					  e->devices[d]->node_index, err, errlen);
	}
	for (size_t r = 0; !ret && r < ck->n_renders; r++)
		ret = gpu_set_add(ck, s, ck->n_procs + r, ck->renders[r].entry->actual_gpu_id,
				  ck->renders[r].entry->node_index, err, errlen);
	return ret;
}

/*
 * Adds the node entries of image `image`, first image wins; the same index
 * must be the same GPU. owner[j]: the image out[j] came from.
 */
static int merge_nodes(const struct ckpt *ck, size_t image, const KfdTopologyEntry *t,
		       KfdNodeEntry **out, size_t *owner, size_t *n, char *err, size_t errlen)
{
	char what[128];

	for (size_t i = 0; i < t->n_nodes; i++) {
		KfdNodeEntry *ne = t->nodes[i];
		size_t j;

		for (j = 0; j < *n && out[j]->index != ne->index; j++)
			;
		if (j == *n) {
			owner[*n] = image;
			out[(*n)++] = ne;
		} else if (out[j]->gpu_id != ne->gpu_id) {
			snprintf(what, sizeof(what), "about node %u (gpu_id %u and %u)", ne->index,
				 out[j]->gpu_id, ne->gpu_id);
			return disagree(ck, owner[j], image, what, err, errlen);
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

static int merge_topology(const struct ckpt *ck, struct kfd_topology *topo, char *err,
			  size_t errlen)
{
	KfdTopologyEntry merged = KFD_TOPOLOGY_ENTRY__INIT;
	KfdNodeEntry **nodes = calloc(count_entries(ck, true) + 1, sizeof(*nodes));
	size_t *owner = calloc(count_entries(ck, true) + 1, sizeof(*owner));
	char why[512];
	int ret = nodes && owner ? 0 : errmsg_set(err, errlen, -ENOMEM, "out of memory");

	for (size_t p = 0; !ret && p < ck->n_procs; p++)
		ret = merge_nodes(ck, p, ck->procs[p].entry->topology, nodes, owner,
				  &merged.n_nodes, err, errlen);
	for (size_t r = 0; !ret && r < ck->n_renders; r++)
		ret = merge_nodes(ck, ck->n_procs + r, ck->renders[r].entry->topology, nodes, owner,
				  &merged.n_nodes, err, errlen);
	if (!ret) {
		merged.nodes = nodes;
		ret = topo_from_image(&merged, topo, why, sizeof(why));
		if (ret)
			errmsg_set(err, errlen, ret, "recorded topologies: %s", why);
	}
	free(nodes);
	free(owner);
	return ret;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

int ckpt_source_build(const struct ckpt *ck, struct ckpt_source *src, char *err, size_t errlen)
{
	size_t cap = count_entries(ck, false);
	struct gpu_set set = {.cap = cap};
	int ret;

	*src = (struct ckpt_source){0};
	set.gpu_ids = calloc(cap + 1, sizeof(*set.gpu_ids));
	set.nodes = calloc(cap + 1, sizeof(*set.nodes));
	set.images = calloc(cap + 1, sizeof(*set.images));
	ret = set.gpu_ids && set.nodes && set.images
		      ? collect_gpus(ck, &set, err, errlen)
		      : errmsg_set(err, errlen, -ENOMEM, "out of memory");
	ret = ret ?: merge_topology(ck, &src->topo, err, errlen);
	free(set.gpu_ids);
	free(set.images);
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
