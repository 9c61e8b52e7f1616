// SPDX-License-Identifier: MIT
/* Topology -> image -> topology for the fuzz targets (see topo_equal.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "topo_equal.h"
#include "images/topology_image.h"

static void links_equal(const struct kfd_link *a, size_t na, const struct kfd_link *b, size_t nb,
			uint32_t index, const char *what)
{
	FUZZ_ASSERT(na == nb, "%s: node %u: %zu links, %zu after the round trip", what, index, na,
		    nb);
	for (size_t i = 0; i < na; i++)
		FUZZ_ASSERT(a[i].type == b[i].type && a[i].node_from == b[i].node_from &&
				    a[i].node_to == b[i].node_to && a[i].weight == b[i].weight &&
				    a[i].flags == b[i].flags &&
				    a[i].min_bandwidth == b[i].min_bandwidth &&
				    a[i].max_bandwidth == b[i].max_bandwidth,
			    "%s: node %u: link %zu differs after the round trip", what, index, i);
}

static void nodes_equal(const struct kfd_node *a, const struct kfd_node *b, const char *what)
{
	uint32_t i = a->index;

	FUZZ_ASSERT(b->index == i && b->accessible, "%s: node %u lost in the round trip", what, i);
	FUZZ_ASSERT(a->is_gpu == b->is_gpu && a->gpu_id == b->gpu_id,
		    "%s: node %u: GPU-ness or gpu_id differs after the round trip", what, i);
	FUZZ_ASSERT(!strcmp(a->name, b->name), "%s: node %u: name '%s' read back as '%s'", what, i,
		    a->name, b->name);
	FUZZ_ASSERT(!memcmp(&a->props, &b->props, sizeof(a->props)),
		    "%s: node %u: properties differ after the round trip", what, i);
	FUZZ_ASSERT(a->vram_size == b->vram_size && a->vram_heap_type == b->vram_heap_type,
		    "%s: node %u: VRAM summary differs after the round trip", what, i);
	FUZZ_ASSERT(a->n_caches == b->n_caches, "%s: node %u: %zu caches read back as %zu", what, i,
		    a->n_caches, b->n_caches);
	links_equal(a->io_links, a->n_io_links, b->io_links, b->n_io_links, i, what);
	links_equal(a->p2p_links, a->n_p2p_links, b->p2p_links, b->n_p2p_links, i, what);
}

static void topologies_equal(const struct kfd_topology *a, const struct kfd_topology *b,
			     const char *what)
{
	size_t last = a->n_nodes;

	while (last && !a->nodes[last - 1].accessible)
		last--;
	FUZZ_ASSERT(b->n_nodes == last, "%s: %zu nodes (last accessible), %zu after the round trip",
		    what, last, b->n_nodes);
	FUZZ_ASSERT(a->has_generation_id == b->has_generation_id &&
			    a->generation_id == b->generation_id,
		    "%s: generation_id differs after the round trip", what);
	for (size_t i = 0; i < last; i++) {
		if (a->nodes[i].accessible)
			nodes_equal(&a->nodes[i], &b->nodes[i], what);
		else
			FUZZ_ASSERT(!b->nodes[i].accessible,
				    "%s: node %zu appeared in the round trip", what, i);
	}
}

void fuzz_topo_round_trip(const struct kfd_topology *t, const char *what)
{
	struct kfd_topology back = {0};
	KfdTopologyEntry *e = NULL, *unpacked;
	uint8_t *buf;
	size_t len, accessible = 0;
	char err[512] = "";
	int ret;

	for (size_t i = 0; i < t->n_nodes; i++)
		accessible += t->nodes[i].accessible;
	if (!accessible)
		return; /* an image needs a node */
	ret = topo_to_image(t, NULL, 0, &e);
	if (ret == -ENOMEM)
		return;
	FUZZ_ASSERT(!ret, "%s: topo_to_image: %d", what, ret);
	len = kfd_topology_entry__get_packed_size(e);
	buf = malloc(len ? len : 1);
	FUZZ_ASSERT(buf, "%s: no memory", what);
	kfd_topology_entry__pack(e, buf);
	topo_image_free(e);
	unpacked = kfd_topology_entry__unpack(NULL, len, buf);
	free(buf);
	FUZZ_ASSERT(unpacked, "%s: a packed image does not unpack", what);
	ret = topo_from_image(unpacked, &back, err, sizeof(err));
	kfd_topology_entry__free_unpacked(unpacked, NULL);
	FUZZ_ASSERT(!ret, "%s: its own image is refused: %s", what, err);
	topologies_equal(t, &back, what);
	topo_free(&back);
}
