// SPDX-License-Identifier: MIT
/* The matcher's requests and tables: who may go where, and messages (match_int.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology/match_int.h"

/* ---- messages ------------------------------------------------------------- */

void mt_msg_init(struct msg *m, char *buf, size_t size)
{
	m->buf = buf;
	m->size = size;
	m->len = 0;
	buf[0] = '\0';
}

/* Appends; a message that does not fit ends in "...". */
__attribute__((format(printf, 2, 3))) void mt_msg_add(struct msg *m, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (m->len + 1 >= m->size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(m->buf + m->len, m->size - m->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= m->size - m->len) {
		m->len = m->size - 1;
		if (m->size > 4)
			memcpy(m->buf + m->size - 4, "...", 4);
		return;
	}
	m->len += (size_t)n;
}

void mt_msg_gpu(struct msg *m, const struct gpu_info *g)
{
	mt_msg_add(m, "node %u (gpu_id %u)", g->node->index, g->node->gpu_id);
}

const char *mt_link_type_name(const struct kfd_link *l)
{
	if (!l)
		return "none";
	switch (l->type) {
	case KFD_IOLINK_XGMI:
		return "xGMI";
	case KFD_IOLINK_PCIEXPRESS:
		return "PCIe";
	default:
		return "other";
	}
}

void mt_msg_link(struct msg *m, const struct kfd_link *l)
{
	if (!l)
		mt_msg_add(m, "none");
	else
		mt_msg_add(m, "%s (type %u, weight %u)", mt_link_type_name(l), l->type, l->weight);
}

/* ---- request validation ---------------------------------------------------- */

const char *const mt_unusable_why[UNUSABLE_KINDS] = {
	[UNUSABLE_UNREADABLE] = "cannot be read: not in the device cgroup?",
	[UNUSABLE_NO_GPU_ID] = "no gpu_id: gpu_id file missing or 0",
};

enum unusable mt_gpu_unusable(const struct kfd_node *n)
{
	if (!n->accessible)
		return UNUSABLE_UNREADABLE;
	if (!n->gpu_id)
		return UNUSABLE_NO_GPU_ID;
	return USABLE;
}

static int check_listed_node(const struct kfd_topology *topo, uint32_t index, const char *what,
			     struct msg *err)
{
	const struct kfd_node *n = topo_node(topo, index);

	if (!n) {
		mt_msg_add(err, "%s node %u does not exist (topology has %zu nodes)", what, index,
			   topo->n_nodes);
		return -ENOENT;
	}
	if (!n->is_gpu) {
		mt_msg_add(err, "%s node %u is not a GPU", what, index);
		return -EINVAL;
	}
	if (mt_gpu_unusable(n) != USABLE) {
		mt_msg_add(err, "%s GPU node %u is not usable (%s)", what, index,
			   mt_unusable_why[mt_gpu_unusable(n)]);
		return n->accessible ? -EINVAL : -EACCES;
	}
	return 0;
}

static int check_unique(const struct side *side, const char *what, struct msg *err)
{
	for (size_t a = 0; a < side->n; a++) {
		for (size_t b = a + 1; b < side->n; b++) {
			const struct kfd_node *x = side->gpu[a].node, *y = side->gpu[b].node;

			if (x == y) {
				mt_msg_add(err, "%s node %u is listed twice", what, x->index);
				return -EINVAL;
			}
			if (x->gpu_id == y->gpu_id) {
				mt_msg_add(err, "%s GPU nodes %u and %u have the same gpu_id %u",
					   what, x->index, y->index, x->gpu_id);
				return -EINVAL;
			}
		}
	}
	return 0;
}

/* Listed nodes, in list order. */
static int collect_listed(struct side *side, const uint32_t *list, size_t n_list, const char *what,
			  struct msg *err)
{
	int ret;

	side->gpu = calloc(n_list ? n_list : 1, sizeof(*side->gpu));
	if (!side->gpu)
		return -ENOMEM;
	for (size_t i = 0; i < n_list; i++) {
		ret = check_listed_node(side->topo, list[i], what, err);
		if (ret)
			return ret;
		side->gpu[side->n++].node = topo_node(side->topo, list[i]);
	}
	return 0;
}

/*
 * Every GPU node in node order. Sources must all be usable (a source GPU
 * without gpu_id cannot be restored); destinations skip what the restored
 * process could not use.
 */
static int collect_all(struct side *side, bool is_src, struct msg *err)
{
	const struct kfd_topology *topo = side->topo;
	int ret;

	side->gpu = calloc(topo->n_nodes ? topo->n_nodes : 1, sizeof(*side->gpu));
	if (!side->gpu)
		return -ENOMEM;
	for (size_t i = 0; i < topo->n_nodes; i++) {
		const struct kfd_node *n = &topo->nodes[i];

		if (!n->is_gpu)
			continue;
		if (is_src) {
			ret = check_listed_node(topo, n->index, "source", err);
			if (ret)
				return ret;
		} else if (mt_gpu_unusable(n) != USABLE) {
			continue;
		}
		side->gpu[side->n++].node = n;
	}
	return 0;
}

static int compare_gpu_index(const void *a, const void *b)
{
	const struct gpu_info *x = a, *y = b;

	return (x->node->index > y->node->index) - (x->node->index < y->node->index);
}

int mt_collect_side(struct side *side, const struct kfd_topology *topo, const uint32_t *list,
		    size_t n_list, bool is_src, struct msg *err)
{
	const char *what = is_src ? "source" : "destination";
	int ret;

	side->topo = topo;
	side->listed = list != NULL;
	if (list)
		ret = collect_listed(side, list, n_list, what, err);
	else
		ret = collect_all(side, is_src, err);
	if (ret)
		return ret;
	ret = check_unique(side, what, err);
	if (ret)
		return ret;
	/* Destinations are a set: node order makes "lowest index first" the tie-break. */
	if (!is_src)
		qsort(side->gpu, side->n, sizeof(*side->gpu), compare_gpu_index);
	return 0;
}

/* ---- per-side tables ------------------------------------------------------- */

enum link_rank mt_link_rank(const struct kfd_link *l)
{
	if (!l)
		return RANK_NONE;
	switch (l->type) {
	case KFD_IOLINK_XGMI:
		return RANK_XGMI;
	case KFD_IOLINK_PCIEXPRESS:
		return RANK_PCIE;
	default:
		return RANK_OTHER;
	}
}

static bool same_physical_gpu(const struct kfd_node *a, const struct kfd_node *b)
{
	uint64_t ua = a->props.unique_id, ub = b->props.unique_id;

	if (!kfd_prop_present(a, KFD_PROP_unique_id))
		ua = 0;
	if (!kfd_prop_present(b, KFD_PROP_unique_id))
		ub = 0;
	if (ua || ub)
		return ua == ub;
	if (!a->props.location_id || !b->props.location_id)
		return false;
	return a->props.domain == b->props.domain &&
	       a->props.location_id >> 3 == b->props.location_id >> 3;
}

static bool same_hive(const struct kfd_node *a, const struct kfd_node *b)
{
	return a->props.hive_id && a->props.hive_id == b->props.hive_id;
}

static uint32_t link_weight(const struct kfd_node *a, const struct kfd_node *b)
{
	const struct kfd_link *l = topo_io_link(a, b->index);

	if (!l)
		l = topo_p2p_link(a, b->index);
	return l ? l->weight : 0;
}

static void describe_gpu(const struct kfd_topology *topo, struct gpu_info *g)
{
	g->cpu = topo_gpu_cpu_node(topo, g->node);
	g->cpu_link = g->cpu >= 0 ? topo_io_link(g->node, (uint32_t)g->cpu) : NULL;
	g->cpu_visible = topo_gpu_cpu_visible(topo, g->node);
}

static uint8_t pair_relations(const struct gpu_info *x, const struct gpu_info *y)
{
	uint8_t rel = 0;

	if (same_physical_gpu(x->node, y->node))
		rel |= REL_PHYS;
	if (same_hive(x->node, y->node))
		rel |= REL_HIVE;
	if (x->cpu >= 0 && x->cpu == y->cpu)
		rel |= REL_CPU;
	return rel;
}

int mt_build_side_tables(struct side *s)
{
	size_t n = s->n;

	s->rank = calloc(n * n + 1, sizeof(*s->rank));
	s->weight = calloc(n * n + 1, sizeof(*s->weight));
	s->rel = calloc(n * n + 1, sizeof(*s->rel));
	if (!s->rank || !s->weight || !s->rel)
		return -ENOMEM;
	for (size_t a = 0; a < n; a++)
		describe_gpu(s->topo, &s->gpu[a]);
	for (size_t a = 0; a < n; a++) {
		for (size_t b = 0; b < n; b++) {
			const struct kfd_node *x = s->gpu[a].node, *y = s->gpu[b].node;

			if (a == b)
				continue;
			s->rank[a * n + b] = (uint8_t)mt_link_rank(topo_io_link(x, y->index));
			s->weight[a * n + b] = link_weight(x, y);
			s->rel[a * n + b] = pair_relations(&s->gpu[a], &s->gpu[b]);
		}
	}
	return 0;
}

static void free_side(struct side *s)
{
	free(s->gpu);
	free(s->rank);
	free(s->weight);
	free(s->rel);
}

/* ---- matcher tables -------------------------------------------------------- */

uint64_t *mt_dom_at(const struct matcher *mt, size_t level, size_t i)
{
	return mt->dom + (level * mt->src.n + i) * mt->words;
}

const uint64_t *mt_allowed_at(const struct matcher *mt, unsigned int cls, size_t d)
{
	return mt->allowed + (cls * mt->dst.n + d) * mt->words;
}

static unsigned int pair_class_of(const struct matcher *mt, size_t i, size_t j)
{
	size_t n = mt->src.n;
	unsigned int cls = mt->src.rank[i * n + j] | (unsigned int)mt->src.rank[j * n + i] << 2;

	if (mt->checks->numa && (mt->src.rel[i * n + j] & REL_CPU))
		cls |= CLASS_NUMA;
	return cls;
}

static bool pair_allowed(const struct matcher *mt, unsigned int cls, size_t d, size_t e)
{
	size_t m = mt->dst.n;

	if (d == e)
		return false;
	if (mt->dst.rank[d * m + e] < CLASS_FWD(cls) || mt->dst.rank[e * m + d] < CLASS_BACK(cls))
		return false;
	return !(cls & CLASS_NUMA) || (mt->dst.rel[d * m + e] & REL_CPU);
}

void mt_build_pair_tables(struct matcher *mt)
{
	size_t n = mt->src.n, m = mt->dst.n;

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			if (i != j)
				mt->pair_class[i * n + j] = (uint8_t)pair_class_of(mt, i, j);
	for (unsigned int cls = 0; cls < N_CLASSES; cls++) {
		for (size_t d = 0; d < m; d++) {
			uint64_t *set = mt->allowed + (cls * m + d) * mt->words;

			for (size_t e = 0; e < m; e++)
				if (pair_allowed(mt, cls, d, e))
					bit_set(set, e);
		}
	}
}

void mt_build_preference_tables(struct matcher *mt)
{
	size_t m = mt->dst.n;

	for (size_t d = 0; d < m; d++) {
		bit_set(mt->phys_mask + d * mt->words, d);
		for (size_t e = 0; e < m; e++)
			if (mt->dst.rel[d * m + e] & REL_PHYS)
				bit_set(mt->phys_mask + d * mt->words, e);
	}
	for (size_t i = 0; i < mt->src.n; i++) {
		const struct gpu_info *s = &mt->src.gpu[i];

		mt->ident[i] = -1;
		for (size_t d = 0; d < mt->dst.n; d++) {
			const struct gpu_info *g = &mt->dst.gpu[d];

			if (g->node->index == s->node->index && g->node->gpu_id == s->node->gpu_id)
				mt->ident[i] = (int)d;
			if (g->cpu == s->cpu)
				bit_set(mt->numa_mask + i * mt->words, d);
		}
	}
}

int mt_alloc_matcher(struct matcher *mt)
{
	size_t n = mt->src.n, m = mt->dst.n, w = (m + 63) / 64 ? (m + 63) / 64 : 1;

	mt->words = w;
	mt->pair_class = calloc(n * n + 1, 1);
	mt->allowed = calloc(N_CLASSES * m * w + 1, sizeof(uint64_t));
	mt->ident = calloc(n + 1, sizeof(int));
	mt->numa_mask = calloc(n * w + 1, sizeof(uint64_t));
	mt->phys_mask = calloc(m * w + 1, sizeof(uint64_t));
	mt->unary = calloc(n * w + 1, sizeof(uint64_t));
	mt->src_comp = calloc(n + 1, sizeof(int));
	mt->dst_comp = calloc(m + 1, sizeof(int));
	mt->stack = calloc(n + m + 1, sizeof(int));
	mt->src_cpu = calloc(n + 1, sizeof(int));
	/* at most one CPU place and one xGMI place per destination, two groups per source */
	mt->places = calloc(2 * m + 1, sizeof(*mt->places));
	mt->groups = calloc(2 * n + 1, sizeof(*mt->groups));
	mt->group_members = calloc(2 * n + 1, sizeof(uint32_t));
	mt->group_places = calloc(2 * n * 2 * m + 1, sizeof(uint32_t));
	mt->place_masks = calloc(2 * m * w + 1, sizeof(uint64_t));
	mt->dom = calloc((n + 1) * n * w + 1, sizeof(uint64_t));
	mt->match = calloc((n + 1) * n + 1, sizeof(int));
	mt->owner = calloc(m + 1, sizeof(int));
	mt->visited = calloc(m + 1, 1);
	mt->assign = calloc(n + 1, sizeof(int));
	mt->placed = calloc(n + 1, sizeof(uint32_t));
	mt->cands = calloc(n * m + 1, sizeof(struct candidate));
	mt->best = calloc(n + 1, sizeof(int));
	if (!mt->pair_class || !mt->allowed || !mt->ident || !mt->numa_mask || !mt->phys_mask ||
	    !mt->unary || !mt->src_comp || !mt->dst_comp || !mt->stack || !mt->src_cpu ||
	    !mt->places || !mt->groups || !mt->group_members || !mt->group_places ||
	    !mt->place_masks || !mt->dom || !mt->match || !mt->owner || !mt->visited ||
	    !mt->assign || !mt->placed || !mt->cands || !mt->best)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		mt->assign[i] = -1;
	return 0;
}

void mt_free_matcher(struct matcher *mt)
{
	free_side(&mt->src);
	free_side(&mt->dst);
	free(mt->pair_class);
	free(mt->allowed);
	free(mt->ident);
	free(mt->numa_mask);
	free(mt->phys_mask);
	free(mt->unary);
	free(mt->src_comp);
	free(mt->dst_comp);
	free(mt->stack);
	free(mt->src_cpu);
	free(mt->places);
	free(mt->groups);
	free(mt->group_members);
	free(mt->group_places);
	free(mt->place_masks);
	free(mt->dom);
	free(mt->match);
	free(mt->owner);
	free(mt->visited);
	free(mt->assign);
	free(mt->placed);
	free(mt->cands);
	free(mt->best);
}
