// SPDX-License-Identifier: MIT
/*
 * Topology model <-> KfdTopologyEntry (see topology_image.h for what an image
 * holds and how missing nodes come back).
 *
 * topo_to_image() builds the message with plain allocations: each repeated
 * field is one block holding the pointer array followed by the records, so a
 * node entry is freed with five free() calls. Property keys point at the
 * static names of kfd_prop_name() and are never freed.
 *
 * topo_from_image() treats the message as hostile: protobuf-c only guarantees
 * well-formed wire data, not sane counts or indexes, and an image can also be
 * built in memory. Every count is bounded before it sizes an allocation, and
 * the node array is sized from the largest index only after all indexes were
 * checked against TOPO_IMAGE_MAX_NODES.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errmsg.h"
#include "images/topology_image.h"

/* ---- model -> image -------------------------------------------------------------------------- */

enum { MARK_LISTED = 1, MARK_KEEP = 2 };

static int select_nodes(const struct kfd_topology *t, const uint32_t *nodes, size_t n,
			uint8_t *mark)
{
	for (size_t i = 0; i < t->n_nodes; i++) {
		const struct kfd_node *nd = &t->nodes[i];

		/* all CPU nodes: then a node missing from an image is always a GPU */
		if (nd->accessible && (!nd->is_gpu || !nodes))
			mark[i] = MARK_KEEP;
	}
	for (size_t k = 0; nodes && k < n; k++) {
		uint32_t i = nodes[k];

		if (i >= t->n_nodes || !t->nodes[i].accessible || (mark[i] & MARK_LISTED))
			return -EINVAL;
		mark[i] |= MARK_LISTED | MARK_KEEP;
	}
	return 0;
}

static KfdLinkEntry **new_links(size_t n)
{
	KfdLinkEntry **p, *rec;

	if (n > SIZE_MAX / (sizeof(*p) + sizeof(**p)))
		return NULL;
	p = calloc(1, n * (sizeof(*p) + sizeof(**p)));
	if (!p)
		return NULL;
	rec = (KfdLinkEntry *)(p + n);
	for (size_t i = 0; i < n; i++) {
		kfd_link_entry__init(&rec[i]);
		p[i] = &rec[i];
	}
	return p;
}

static KfdPropEntry **new_props(size_t n)
{
	KfdPropEntry **p, *rec;

	if (n > SIZE_MAX / (sizeof(*p) + sizeof(**p)))
		return NULL;
	p = calloc(1, n * (sizeof(*p) + sizeof(**p)));
	if (!p)
		return NULL;
	rec = (KfdPropEntry *)(p + n);
	for (size_t i = 0; i < n; i++) {
		kfd_prop_entry__init(&rec[i]);
		p[i] = &rec[i];
	}
	return p;
}

static int links_to_entries(const struct kfd_link *links, size_t n, KfdLinkEntry ***out,
			    size_t *n_out)
{
	KfdLinkEntry **e;

	if (!n)
		return 0;
	e = new_links(n);
	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		e[i]->type = links[i].type;
		e[i]->node_from = links[i].node_from;
		e[i]->node_to = links[i].node_to;
		e[i]->weight = links[i].weight;
		e[i]->has_flags = true;
		e[i]->flags = links[i].flags;
		e[i]->has_min_bandwidth = true;
		e[i]->min_bandwidth = links[i].min_bandwidth;
		e[i]->has_max_bandwidth = true;
		e[i]->max_bandwidth = links[i].max_bandwidth;
	}
	*out = e;
	*n_out = n;
	return 0;
}

static int props_to_entries(const struct kfd_node *nd, KfdNodeEntry *ne)
{
	size_t n = (size_t)__builtin_popcountll(nd->props.present), k = 0;

	if (!n)
		return 0;
	ne->props = new_props(n);
	if (!ne->props)
		return -ENOMEM;
	for (int p = 0; p < KFD_PROP__COUNT; p++) {
		if (!kfd_prop_present(nd, (enum kfd_prop)p))
			continue;
		/* static storage; topo_image_free() leaves keys alone */
		ne->props[k]->key = (char *)kfd_prop_name((enum kfd_prop)p);
		ne->props[k++]->value = kfd_prop_get(nd, (enum kfd_prop)p);
	}
	ne->n_props = n;
	return 0;
}

static void free_node_entry(KfdNodeEntry *ne)
{
	if (!ne)
		return;
	free(ne->name);
	free(ne->props);
	free(ne->io_links);
	free(ne->p2p_links);
	free(ne);
}

static int node_to_entry(const struct kfd_node *nd, KfdNodeEntry **out)
{
	KfdNodeEntry *ne;
	int ret = -ENOMEM;

	if (nd->n_caches > UINT32_MAX)
		return -EINVAL;
	ne = calloc(1, sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	kfd_node_entry__init(ne);
	ne->index = nd->index;
	ne->gpu_id = nd->gpu_id;
	if (nd->name[0] && !(ne->name = strndup(nd->name, sizeof(nd->name) - 1)))
		goto fail;
	ne->has_vram_size = true;
	ne->vram_size = nd->vram_size;
	ne->has_vram_heap_type = true;
	ne->vram_heap_type = nd->vram_heap_type;
	ne->has_caches_found = true;
	ne->caches_found = (uint32_t)nd->n_caches;
	ret = props_to_entries(nd, ne);
	if (!ret)
		ret = links_to_entries(nd->io_links, nd->n_io_links, &ne->io_links,
				       &ne->n_io_links);
	if (!ret)
		ret = links_to_entries(nd->p2p_links, nd->n_p2p_links, &ne->p2p_links,
				       &ne->n_p2p_links);
	if (ret)
		goto fail;
	*out = ne;
	return 0;
fail:
	free_node_entry(ne);
	return ret;
}

void topo_image_free(KfdTopologyEntry *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n_nodes; i++)
		free_node_entry(e->nodes[i]);
	free(e->nodes);
	free(e);
}

static int fill_image(const struct kfd_topology *t, const uint8_t *mark, KfdTopologyEntry *e)
{
	size_t keep = 0;
	int ret;

	for (size_t i = 0; i < t->n_nodes; i++)
		keep += !!(mark[i] & MARK_KEEP);
	e->nodes = calloc(keep ? keep : 1, sizeof(*e->nodes));
	if (!e->nodes)
		return -ENOMEM;
	for (size_t i = 0; i < t->n_nodes; i++) {
		if (!(mark[i] & MARK_KEEP))
			continue;
		ret = node_to_entry(&t->nodes[i], &e->nodes[e->n_nodes]);
		if (ret)
			return ret;
		e->n_nodes++;
	}
	e->has_generation_id = t->has_generation_id;
	e->generation_id = t->generation_id;
	return 0;
}

int topo_to_image(const struct kfd_topology *t, const uint32_t *nodes, size_t n,
		  KfdTopologyEntry **out)
{
	KfdTopologyEntry *e = NULL;
	uint8_t *mark = NULL;
	int ret;

	if (!t || !out)
		return -EINVAL;
	*out = NULL;
	mark = calloc(t->n_nodes ? t->n_nodes : 1, 1);
	e = calloc(1, sizeof(*e));
	if (!mark || !e) {
		ret = -ENOMEM;
		goto out;
	}
	kfd_topology_entry__init(e);
	ret = select_nodes(t, nodes, n, mark);
	if (!ret)
		ret = fill_image(t, mark, e);
	if (ret)
		goto out;
	*out = e;
	e = NULL;
out:
	topo_image_free(e);
	free(mark);
	return ret;
}

/* ---- image -> model -------------------------------------------------------------------------- */

struct errmsg {
	char *buf;
	size_t len;
};

static int prop_lookup(const char *key)
{
	for (int p = 0; p < KFD_PROP__COUNT; p++)
		if (!strcmp(kfd_prop_name((enum kfd_prop)p), key))
			return p;
	return -1;
}

static void prop_set(struct kfd_node_props *props, enum kfd_prop p, uint64_t v)
{
	switch (p) {
#define KFD_PROP_SET(name)                                                                         \
	case KFD_PROP_##name:                                                                      \
		props->name = v;                                                                   \
		break;
		KFD_NODE_PROPS(KFD_PROP_SET)
#undef KFD_PROP_SET
	default:
		return;
	}
	props->present |= 1ULL << p;
}

/* Node indexes: all present, bounded and unique is checked later; returns the largest. */
static int check_node_list(const KfdTopologyEntry *e, struct errmsg *m, uint32_t *max_index)
{
	*max_index = 0;
	if (!e->n_nodes)
		return errmsg_set(m->buf, m->len, -EINVAL, "topology image: no nodes");
	if (e->n_nodes > TOPO_IMAGE_MAX_NODES)
		return errmsg_set(m->buf, m->len, -EINVAL,
				  "topology image: %zu nodes, more than %d", e->n_nodes,
				  TOPO_IMAGE_MAX_NODES);
	if (!e->nodes)
		return errmsg_set(m->buf, m->len, -EINVAL, "topology image: node list missing");
	for (size_t i = 0; i < e->n_nodes; i++) {
		if (!e->nodes[i])
			return errmsg_set(m->buf, m->len, -EINVAL,
					  "topology image: node entry %zu missing", i);
		if (e->nodes[i]->index >= TOPO_IMAGE_MAX_NODES)
			return errmsg_set(m->buf, m->len, -EINVAL,
					  "topology image: node index %u out of range (max %d)",
					  e->nodes[i]->index, TOPO_IMAGE_MAX_NODES - 1);
		if (e->nodes[i]->index > *max_index)
			*max_index = e->nodes[i]->index;
	}
	return 0;
}

static int props_from_entries(const KfdNodeEntry *ne, struct kfd_node *nd, struct errmsg *m)
{
	if (ne->n_props > TOPO_IMAGE_MAX_PROPS)
		return errmsg_set(m->buf, m->len, -EINVAL,
				  "topology image: node %u: %zu properties, more than %d",
				  ne->index, ne->n_props, TOPO_IMAGE_MAX_PROPS);
	if (ne->n_props && !ne->props)
		return errmsg_set(m->buf, m->len, -EINVAL,
				  "topology image: node %u: property list missing", ne->index);
	for (size_t i = 0; i < ne->n_props; i++) {
		const KfdPropEntry *pe = ne->props[i];
		int p;

		if (!pe || !pe->key)
			return errmsg_set(m->buf, m->len, -EINVAL,
					  "topology image: node %u: property %zu missing",
					  ne->index, i);
		p = prop_lookup(pe->key);
		if (p < 0)
			continue; /* a newer writer's key */
		if (kfd_prop_present(nd, (enum kfd_prop)p))
			return errmsg_set(m->buf, m->len, -EINVAL,
					  "topology image: node %u: duplicate property %s",
					  ne->index, kfd_prop_name((enum kfd_prop)p));
		prop_set(&nd->props, (enum kfd_prop)p, pe->value);
	}
	if (!kfd_render_minor_valid(nd->props.drm_render_minor))
		return errmsg_set(m->buf, m->len, -EINVAL,
				  "topology image: node %u: drm_render_minor %" PRIu64
				  " out of range",
				  ne->index, nd->props.drm_render_minor);
	return 0;
}

static int links_from_entries(uint32_t index, const char *what, KfdLinkEntry *const *le, size_t n,
			      struct kfd_link **out, size_t *n_out, struct errmsg *m)
{
	struct kfd_link *links;

	if (n > TOPO_IMAGE_MAX_LINKS)
		return errmsg_set(m->buf, m->len, -EINVAL,
				  "topology image: node %u: %zu %s, more than %d", index, n, what,
				  TOPO_IMAGE_MAX_LINKS);
	if (!n)
		return 0;
	if (!le)
		return errmsg_set(m->buf, m->len, -EINVAL,
				  "topology image: node %u: %s list missing", index, what);
	links = calloc(n, sizeof(*links));
	if (!links)
		return errmsg_set(m->buf, m->len, -ENOMEM, "topology image: out of memory");
	/* the node owns the array from here, also if a check below fails */
	*out = links;
	*n_out = n;
	for (size_t i = 0; i < n; i++) {
		if (!le[i])
			return errmsg_set(m->buf, m->len, -EINVAL,
					  "topology image: node %u: %s entry %zu missing", index,
					  what, i);
		if (le[i]->node_from >= TOPO_IMAGE_MAX_NODES ||
		    le[i]->node_to >= TOPO_IMAGE_MAX_NODES)
			return errmsg_set(
				m->buf, m->len, -EINVAL,
				"topology image: node %u: %s entry %zu: node %u -> %u out of "
				"range (max %d)",
				index, what, i, le[i]->node_from, le[i]->node_to,
				TOPO_IMAGE_MAX_NODES - 1);
		links[i] = (struct kfd_link){
			.type = le[i]->type,
			.node_from = le[i]->node_from,
			.node_to = le[i]->node_to,
			.weight = le[i]->weight,
			.flags = le[i]->has_flags ? le[i]->flags : 0,
			.min_bandwidth = le[i]->has_min_bandwidth ? le[i]->min_bandwidth : 0,
			.max_bandwidth = le[i]->has_max_bandwidth ? le[i]->max_bandwidth : 0,
		};
	}
	return 0;
}

static int scalars_from_entry(const KfdNodeEntry *ne, struct kfd_node *nd, struct errmsg *m)
{
	size_t len = ne->name ? strnlen(ne->name, sizeof(nd->name)) : 0;

	if (len == sizeof(nd->name))
		return errmsg_set(m->buf, m->len, -EINVAL,
				  "topology image: node %u: name longer than %zu bytes", ne->index,
				  sizeof(nd->name) - 1);
	if (ne->has_vram_heap_type && ne->vram_heap_type != 0 &&
	    ne->vram_heap_type != KFD_HEAP_FB_PUBLIC && ne->vram_heap_type != KFD_HEAP_FB_PRIVATE)
		return errmsg_set(m->buf, m->len, -EINVAL,
				  "topology image: node %u: VRAM heap type %u", ne->index,
				  ne->vram_heap_type);
	if (ne->has_caches_found && ne->caches_found > TOPO_IMAGE_MAX_LINKS)
		return errmsg_set(m->buf, m->len, -EINVAL,
				  "topology image: node %u: %u caches, more than %d", ne->index,
				  ne->caches_found, TOPO_IMAGE_MAX_LINKS);
	memcpy(nd->name, ne->name ? ne->name : "", len);
	nd->name[len] = '\0';
	nd->gpu_id = ne->gpu_id;
	nd->vram_size = ne->has_vram_size ? ne->vram_size : 0;
	nd->vram_heap_type = ne->has_vram_heap_type ? ne->vram_heap_type : 0;
	nd->n_caches = ne->has_caches_found ? ne->caches_found : 0;
	return 0;
}

static int node_from_entry(const KfdNodeEntry *ne, struct kfd_node *nd, struct errmsg *m)
{
	int ret;

	if (nd->accessible)
		return errmsg_set(m->buf, m->len, -EINVAL, "topology image: node %u appears twice",
				  ne->index);
	memset(nd, 0, sizeof(*nd));
	nd->index = ne->index;
	nd->accessible = true; /* before anything can fail: marks the slot taken */
	ret = scalars_from_entry(ne, nd, m);
	if (!ret)
		ret = props_from_entries(ne, nd, m);
	if (!ret)
		ret = links_from_entries(ne->index, "io_links", ne->io_links, ne->n_io_links,
					 &nd->io_links, &nd->n_io_links, m);
	if (!ret)
		ret = links_from_entries(ne->index, "p2p_links", ne->p2p_links, ne->n_p2p_links,
					 &nd->p2p_links, &nd->n_p2p_links, m);
	nd->is_gpu = nd->props.simd_count > 0;
	return ret;
}

int topo_from_image(const KfdTopologyEntry *e, struct kfd_topology *out, char *errbuf,
		    size_t errlen)
{
	struct errmsg m = {errbuf, errlen};
	struct kfd_topology t = {0};
	uint32_t max_index;
	int ret;

	if (!e || !out)
		return errmsg_set(m.buf, m.len, -EINVAL, "topology image: nothing to read");
	memset(out, 0, sizeof(*out));
	ret = check_node_list(e, &m, &max_index);
	if (ret)
		return ret;
	t.nodes = calloc((size_t)max_index + 1, sizeof(*t.nodes));
	if (!t.nodes)
		return errmsg_set(m.buf, m.len, -ENOMEM, "topology image: out of memory");
	t.n_nodes = (size_t)max_index + 1;
	/* what topo_load() shows for a GPU it may not read */
	for (uint32_t i = 0; i <= max_index; i++)
		t.nodes[i] = (struct kfd_node){.index = i, .is_gpu = true};
	for (size_t i = 0; i < e->n_nodes && !ret; i++)
		ret = node_from_entry(e->nodes[i], &t.nodes[e->nodes[i]->index], &m);
	if (ret) {
		topo_free(&t);
		return ret;
	}
	t.has_generation_id = e->has_generation_id;
	t.generation_id = e->has_generation_id ? e->generation_id : 0;
	*out = t;
	if (errbuf && errlen)
		errbuf[0] = '\0';
	return 0;
}
