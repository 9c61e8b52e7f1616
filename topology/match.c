// SPDX-License-Identifier: MIT
/*
 * topo_match(): map checkpointed GPUs onto destination GPUs (contract in
 * match.h).
 *
 * Search. Every source GPU gets a domain: the destinations that pass
 * match_gpu_compat() and the unary structural rules (link to the CPU not
 * weaker, CPU-visible VRAM kept). Pair rules (a direct link between two
 * source GPUs is not replaced by a weaker one in either direction; with the
 * NUMA check, GPUs that shared a CPU node keep sharing one) are folded into
 * at most 32 constraint classes; for each class and destination a bitset
 * says which destinations may sit next to it.
 *
 * The search has two levels:
 *   1. groups: sources that must land together -- a NUMA group (sources on
 *      one CPU node) on one destination CPU node, an xGMI group (sources
 *      connected by xGMI links) in one destination xGMI component (a linked
 *      pair must land on a linked pair, so a connected group cannot span
 *      two components). Each group picks a place, preferred places
 *      first, and every choice must leave a complete bipartite matching of
 *      all sources into their narrowed domains. Without this level a group
 *      that must move to the other socket is found out only after its first
 *      GPU is placed, and the search would retry every permutation of the
 *      GPUs placed before.
 *   2. GPUs: depth-first backtracking over sources (fewest candidates
 *      first) with forward checking (placing a source filters every other
 *      domain with the pair bitsets) and an all-different check at every
 *      node (a complete matching of the remaining sources must exist,
 *      repaired by augmenting paths from the parent's matching), so a choice
 *      that starves a later GPU (a small-VRAM source taking the only large
 *      partition) is refused at once.
 * Both levels enumerate every choice and no limit applies before the first
 * solution, so the search is complete. When the group places imply all
 * pair rules (the usual case: hives are cliques), level 2 never backtracks
 * for feasibility.
 *
 * Cost, compared lexicographically, smaller is better:
 *   1. identity misses: sources not on the destination with the same node
 *      index and gpu_id;
 *   2. link weight cost: over every pair of sources, |w_src - w_dst| where w
 *      is the direct io_link weight, else the p2p_link weight, else 0; plus
 *      PHYS_SPLIT_PENALTY when two partitions of one physical GPU land on
 *      different physical GPUs and HIVE_SPLIT_PENALTY when two GPUs of one
 *      hive land outside one hive;
 *   3. NUMA misses: sources whose destination's CPU node index differs.
 * Each term only grows as sources are placed, so branch and bound prunes a
 * partial assignment whose lower bound (cost so far plus the identity / NUMA
 * misses already forced by the domains) is not below the best. Candidates
 * are tried cheapest first (identity, weight, NUMA, then the physical GPU
 * that best fits the rest of the source's physical GPU, then the lowest
 * node index), so the first solution is usually optimal; the search stops
 * when a solution reaches the root's lower bound or IMPROVE_STEPS
 * assignments after the first solution (a step count, not a clock: the
 * answer is deterministic). Group places are tried in preference order, so
 * the budget goes to the most promising placement first.
 *
 * Physical GPU of a partition: nodes with a nonzero unique_id share the
 * physical GPU iff their unique_ids are equal (all partitions of a board
 * report the board's id); when both unique_ids are 0 or absent (consumer
 * parts, old kernels), iff domain and location_id >> 3 (bus and device
 * without the function bits, which partitions use for their index) are
 * equal and location_id is nonzero.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match.h"

/* Link strength: a source link may only be kept or replaced by a stronger one. */
enum link_rank {
	RANK_NONE,
	RANK_OTHER,
	RANK_PCIE,
	RANK_XGMI,
};

/* Relations between two GPUs of one side. */
#define REL_PHYS 1u /* partitions of one physical GPU */
#define REL_HIVE 2u /* same nonzero hive_id */
#define REL_CPU	 4u /* same CPU node */

/*
 * A split costs more than any weight change between two real links (13 vs
 * 72 at most in the captures), so keeping a physical GPU or a hive together
 * wins over a better weight elsewhere.
 */
#define PHYS_SPLIT_PENALTY 100
#define HIVE_SPLIT_PENALTY 100

/* Assignments tried after the first solution before settling for the best found. */
#define IMPROVE_STEPS 20000

/* Constraint class of a source pair: rank needed i->j, rank needed j->i, same CPU needed. */
#define CLASS_FWD(c)  ((c)&3u)
#define CLASS_BACK(c) (((c) >> 2) & 3u)
#define CLASS_NUMA    16u
#define N_CLASSES     32u

struct gpu_info {
	const struct kfd_node *node;
	int cpu;			 /* topo_gpu_cpu_node(), -1 if unknown */
	const struct kfd_link *cpu_link; /* the GPU's io_link to that CPU node */
	bool cpu_visible;		 /* a CPU node has an io_link to it (large BAR) */
};

/* The GPUs of one side and the relations between every pair of them. */
struct side {
	const struct kfd_topology *topo;
	bool listed; /* the GPUs were listed; else every usable GPU of topo */
	struct gpu_info *gpu;
	size_t n;
	uint8_t *rank;	  /* [a * n + b]: rank of the direct io_link a->b */
	uint32_t *weight; /* [a * n + b]: io_link weight, else p2p_link weight, else 0 */
	uint8_t *rel;	  /* [a * n + b]: REL_* bits */
};

struct cost {
	uint64_t ident;
	uint64_t weight;
	uint64_t numa;
};

struct candidate {
	uint32_t d; /* destination position */
	struct cost delta;
	uint64_t fit; /* tie-break: how well d's physical GPU fits the rest of the source's */
};

enum group_kind {
	GROUP_NUMA, /* sources on one CPU node (NUMA check on) */
	GROUP_XGMI, /* sources connected by xGMI links */
};

/*
 * Where a group of sources must land together: a destination CPU node for a
 * NUMA group, a destination xGMI component (GPUs connected by xGMI links,
 * in practice a hive) for an xGMI group.
 */
struct place {
	enum group_kind kind;
	int key;	/* CPU node index / component number */
	uint64_t *mask; /* the destinations in it */
};

struct group {
	enum group_kind kind;
	int key;	   /* source CPU node index / component number */
	uint32_t *members; /* source positions, ascending */
	size_t n_members;
	uint32_t *places; /* candidate places, preferred first */
	size_t n_places;
	size_t chosen; /* index into places while placing */
};

struct matcher {
	const struct match_checks *checks;
	struct side src, dst;
	size_t words;	     /* uint64_t words of a destination bitset */
	uint8_t *pair_class; /* [i * n + j]: what j's destination must satisfy next to i's */
	uint64_t *allowed;   /* [(class * m + d) * words]: destinations allowed next to d */
	int *ident;	     /* per source: destination position of the same GPU, or -1 */
	uint64_t *numa_mask; /* [i * words]: destinations on source i's CPU node index */
	uint64_t *phys_mask; /* [d * words]: destinations on d's physical GPU */
	uint64_t *unary;     /* [i * words]: candidates of source i by the per-GPU rules */
	int *src_comp;	     /* per source: xGMI component number */
	int *dst_comp;	     /* per destination: xGMI component number */
	int *src_cpu;	     /* per source: CPU node index, -1 if unknown */
	int *stack;	     /* scratch for component search, max(n, m) */
	struct place *places;
	size_t n_places;
	uint64_t *place_masks; /* storage for places[].mask */
	struct group *groups;
	size_t n_groups;
	uint32_t *group_members; /* storage for groups[].members */
	uint32_t *group_places;	 /* storage for groups[].places */

	/* search state; level = number of sources placed */
	uint64_t *dom;		 /* [(level * n + i) * words]: candidates of source i */
	int *match;		 /* [level * n + i]: i's destination in a complete matching */
	int *owner;		 /* per destination: source matched to it (scratch) */
	uint8_t *visited;	 /* per destination (scratch for augmenting paths) */
	int *assign;		 /* per source: destination position, or -1 */
	uint32_t *placed;	 /* sources in the order they were placed */
	struct candidate *cands; /* [level * m]: candidates of the source placed at level */
	int *best;
	struct cost best_cost;
	struct cost root_bound;
	bool have_best;
	bool stop;
	uint64_t steps;
	uint64_t steps_at_first;
};

/* ---- messages ------------------------------------------------------------- */

struct msg {
	char *buf;
	size_t size;
	size_t len;
};

static void msg_init(struct msg *m, char *buf, size_t size)
{
	m->buf = buf;
	m->size = size;
	m->len = 0;
	buf[0] = '\0';
}

/* Appends; a message that does not fit ends in "...". */
__attribute__((format(printf, 2, 3))) static void msg_add(struct msg *m, const char *fmt, ...)
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

static void msg_gpu(struct msg *m, const struct gpu_info *g)
{
	msg_add(m, "node %u (gpu_id %u)", g->node->index, g->node->gpu_id);
}

static const char *link_type_name(const struct kfd_link *l)
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

static void msg_link(struct msg *m, const struct kfd_link *l)
{
	if (!l)
		msg_add(m, "none");
	else
		msg_add(m, "%s (type %u, weight %u)", link_type_name(l), l->type, l->weight);
}

/* ---- bitsets -------------------------------------------------------------- */

static bool bit_test(const uint64_t *set, size_t b)
{
	return (set[b / 64] >> (b % 64)) & 1;
}

static void bit_set(uint64_t *set, size_t b)
{
	set[b / 64] |= 1ULL << (b % 64);
}

static void bit_clear(uint64_t *set, size_t b)
{
	set[b / 64] &= ~(1ULL << (b % 64));
}

/* First set bit at or after `from`, or words * 64. */
static size_t bit_next(const uint64_t *set, size_t words, size_t from)
{
	size_t w = from / 64;
	uint64_t x;

	if (w >= words)
		return words * 64;
	x = set[w] & (~0ULL << (from % 64));
	while (!x) {
		if (++w == words)
			return words * 64;
		x = set[w];
	}
	return w * 64 + (size_t)__builtin_ctzll(x);
}

#define for_each_bit(b, set, words)                                                                \
	for (size_t b = bit_next(set, words, 0); b < (words)*64; b = bit_next(set, words, b + 1))

static size_t bits_count(const uint64_t *set, size_t words)
{
	size_t c = 0;

	for (size_t w = 0; w < words; w++)
		c += (size_t)__builtin_popcountll(set[w]);
	return c;
}

static bool bits_intersect(const uint64_t *a, const uint64_t *b, size_t words)
{
	for (size_t w = 0; w < words; w++)
		if (a[w] & b[w])
			return true;
	return false;
}

static bool bits_intersect3(const uint64_t *a, const uint64_t *b, const uint64_t *c, size_t words)
{
	for (size_t w = 0; w < words; w++)
		if (a[w] & b[w] & c[w])
			return true;
	return false;
}

/* ---- request validation ---------------------------------------------------- */

/*
 * Why a GPU node cannot take part in a match. One wording for a listed node
 * (an error) and for the nodes the default destination set skips (named
 * when too few are left), so both say the same thing.
 */
enum unusable { USABLE = -1, UNUSABLE_UNREADABLE, UNUSABLE_NO_GPU_ID, UNUSABLE_KINDS };

static const char *const unusable_why[UNUSABLE_KINDS] = {
	[UNUSABLE_UNREADABLE] = "cannot be read: not in the device cgroup?",
	[UNUSABLE_NO_GPU_ID] = "no gpu_id: gpu_id file missing or 0",
};

static enum unusable gpu_unusable(const struct kfd_node *n)
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
		msg_add(err, "%s node %u does not exist (topology has %zu nodes)", what, index,
			topo->n_nodes);
		return -ENOENT;
	}
	if (!n->is_gpu) {
		msg_add(err, "%s node %u is not a GPU", what, index);
		return -EINVAL;
	}
	if (gpu_unusable(n) != USABLE) {
		msg_add(err, "%s GPU node %u is not usable (%s)", what, index,
			unusable_why[gpu_unusable(n)]);
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
				msg_add(err, "%s node %u is listed twice", what, x->index);
				return -EINVAL;
			}
			if (x->gpu_id == y->gpu_id) {
				msg_add(err, "%s GPU nodes %u and %u have the same gpu_id %u", what,
					x->index, y->index, x->gpu_id);
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
		} else if (gpu_unusable(n) != USABLE) {
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

static int collect_side(struct side *side, const struct kfd_topology *topo, const uint32_t *list,
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

static enum link_rank link_rank(const struct kfd_link *l)
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

static int build_side_tables(struct side *s)
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
			s->rank[a * n + b] = (uint8_t)link_rank(topo_io_link(x, y->index));
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

static uint64_t *dom_at(const struct matcher *mt, size_t level, size_t i)
{
	return mt->dom + (level * mt->src.n + i) * mt->words;
}

static const uint64_t *allowed_at(const struct matcher *mt, unsigned int cls, size_t d)
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

static void build_pair_tables(struct matcher *mt)
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

static void build_preference_tables(struct matcher *mt)
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

static int alloc_matcher(struct matcher *mt)
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

static void free_matcher(struct matcher *mt)
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

/* ---- unary checks: per-GPU domain ----------------------------------------- */

/* Structural rules that involve one GPU: its link to the CPU and CPU access to its VRAM. */
static int check_cpu_attachment(const struct gpu_info *s, const struct gpu_info *d, int failed,
				char *why, size_t whylen)
{
	int n = 0;

	if (link_rank(d->cpu_link) < link_rank(s->cpu_link)) {
		if (why && whylen && !failed && !n) {
			struct msg m;

			msg_init(&m, why, whylen);
			msg_add(&m, "link to CPU: source ");
			msg_link(&m, s->cpu_link);
			msg_add(&m, ", destination ");
			msg_link(&m, d->cpu_link);
			msg_add(&m, " (must not be weaker)");
		}
		n++;
	}
	if (s->cpu_visible && !d->cpu_visible) {
		if (why && whylen && !failed && !n)
			snprintf(why, whylen,
				 "large BAR: source VRAM is reachable by the CPU (CPU->GPU "
				 "io_link), "
				 "destination VRAM is not");
		n++;
	}
	return n;
}

/* Number of failed per-GPU checks of source i on destination d; the first is described. */
static int unary_failures(const struct matcher *mt, size_t i, size_t d, char *why, size_t whylen)
{
	const struct gpu_info *s = &mt->src.gpu[i], *g = &mt->dst.gpu[d];
	int failed = match_gpu_compat(mt->checks, s->node, g->node, why, whylen);

	return failed + check_cpu_attachment(s, g, failed, why, whylen);
}

static void explain_no_candidate(const struct matcher *mt, size_t i, struct msg *out)
{
	char why[256] = "", best_why[256] = "";
	int best_fails = -1;
	size_t best = 0;

	for (size_t d = 0; d < mt->dst.n; d++) {
		int fails = unary_failures(mt, i, d, why, sizeof(why));

		if (best_fails < 0 || fails < best_fails) {
			best_fails = fails;
			best = d;
			memcpy(best_why, why, sizeof(why));
		}
	}
	msg_add(out, "source GPU ");
	msg_gpu(out, &mt->src.gpu[i]);
	msg_add(out, ": no compatible destination; best candidate ");
	msg_gpu(out, &mt->dst.gpu[best]);
	msg_add(out, ": %s", best_why);
}

/* Per-GPU candidates. False (with the reason) if a source has none. */
static bool build_domains(struct matcher *mt, struct msg *out)
{
	for (size_t i = 0; i < mt->src.n; i++) {
		uint64_t *dom = mt->unary + i * mt->words;

		for (size_t d = 0; d < mt->dst.n; d++)
			if (!unary_failures(mt, i, d, NULL, 0))
				bit_set(dom, d);
		if (!bits_count(dom, mt->words)) {
			explain_no_candidate(mt, i, out);
			return false;
		}
	}
	return true;
}

/* ---- all-different: bipartite matching ------------------------------------- */

static bool augment(struct matcher *mt, size_t level, size_t j)
{
	int *match = mt->match + level * mt->src.n;

	for_each_bit(d, dom_at(mt, level, j), mt->words)
	{
		if (mt->visited[d])
			continue;
		mt->visited[d] = 1;
		if (mt->owner[d] < 0 || augment(mt, level, (size_t)mt->owner[d])) {
			match[j] = (int)d;
			mt->owner[d] = (int)j;
			return true;
		}
	}
	return false;
}

/*
 * Completes the matching of the unplaced sources at `level`, keeping what
 * is still valid from level - 1. Returns the first source that cannot be
 * matched, or -1; mt->visited/owner then describe the alternating tree.
 */
static long complete_matching(struct matcher *mt, size_t level)
{
	size_t n = mt->src.n;
	int *cur = mt->match + level * n;
	const int *prev = level ? cur - n : NULL;

	for (size_t d = 0; d < mt->dst.n; d++)
		mt->owner[d] = -1;
	for (size_t j = 0; j < n; j++) {
		int p = prev ? prev[j] : -1;

		cur[j] = -1;
		if (mt->assign[j] >= 0 || p < 0 || !bit_test(dom_at(mt, level, j), (size_t)p))
			continue;
		cur[j] = p;
		mt->owner[p] = (int)j;
	}
	for (size_t j = 0; j < n; j++) {
		if (mt->assign[j] >= 0 || cur[j] >= 0)
			continue;
		memset(mt->visited, 0, mt->dst.n);
		if (!augment(mt, level, j))
			return (long)j;
	}
	return -1;
}

/* Source i is in the alternating tree of the failed augmenting path from source j. */
static bool in_hall_set(const struct matcher *mt, size_t j, size_t i)
{
	if (i == j)
		return true;
	for (size_t d = 0; d < mt->dst.n; d++)
		if (mt->visited[d] && mt->owner[d] == (int)i)
			return true;
	return false;
}

/* Why the lowest conflicting source cannot use the nearest destination outside the set. */
static void explain_hall_outsider(const struct matcher *mt, size_t i, struct msg *out)
{
	char why[256] = "", best_why[256] = "";
	int best_fails = -1;
	size_t best = 0;

	for (size_t d = 0; d < mt->dst.n; d++) {
		int fails;

		if (mt->visited[d])
			continue;
		fails = unary_failures(mt, i, d, why, sizeof(why));
		if (best_fails < 0 || fails < best_fails) {
			best_fails = fails;
			best = d;
			memcpy(best_why, why, sizeof(why));
		}
	}
	if (best_fails < 0)
		return;
	msg_add(out, " (source ");
	msg_gpu(out, &mt->src.gpu[i]);
	msg_add(out, " cannot use ");
	msg_gpu(out, &mt->dst.gpu[best]);
	msg_add(out, ": %s)", best_why);
}

/*
 * Hall violation found by a failed augmenting path from source j: the
 * sources of the alternating tree can only use the destinations it visited,
 * and there are fewer of those. Counts and an example come first, so that
 * they survive when the lists do not fit.
 */
static void explain_hall(const struct matcher *mt, size_t j, struct msg *out)
{
	size_t n_src = 0, n_dst = 0, first = j;

	for (size_t i = 0; i < mt->src.n; i++) {
		if (!in_hall_set(mt, j, i))
			continue;
		if (!n_src++)
			first = i;
	}
	for (size_t d = 0; d < mt->dst.n; d++)
		n_dst += mt->visited[d];
	msg_add(out, "%zu source GPUs compete for %zu compatible destination GPU%s", n_src, n_dst,
		n_dst == 1 ? "" : "s");
	explain_hall_outsider(mt, first, out);
	msg_add(out, ": sources ");
	for (size_t i = 0, k = 0; i < mt->src.n; i++) {
		if (!in_hall_set(mt, j, i))
			continue;
		msg_add(out, "%s", k++ ? ", " : "");
		msg_gpu(out, &mt->src.gpu[i]);
	}
	msg_add(out, "; destinations ");
	for (size_t d = 0, k = 0; d < mt->dst.n; d++) {
		if (!mt->visited[d])
			continue;
		msg_add(out, "%s", k++ ? ", " : "");
		msg_gpu(out, &mt->dst.gpu[d]);
	}
}

/* ---- cost ------------------------------------------------------------------- */

static int cost_cmp(const struct cost *a, const struct cost *b)
{
	if (a->ident != b->ident)
		return a->ident < b->ident ? -1 : 1;
	if (a->weight != b->weight)
		return a->weight < b->weight ? -1 : 1;
	if (a->numa != b->numa)
		return a->numa < b->numa ? -1 : 1;
	return 0;
}

static struct cost cost_add(struct cost a, const struct cost *b)
{
	a.ident += b->ident;
	a.weight += b->weight;
	a.numa += b->numa;
	return a;
}

/* Weight cost of sources i and j placed on destinations di and dj. */
static uint64_t pair_cost(const struct matcher *mt, size_t i, size_t j, size_t di, size_t dj)
{
	size_t n = mt->src.n, m = mt->dst.n;
	size_t a = i < j ? i : j, b = i < j ? j : i;
	size_t da = i < j ? di : dj, db = i < j ? dj : di;
	uint32_t sw = mt->src.weight[a * n + b], dw = mt->dst.weight[da * m + db];
	uint8_t srel = mt->src.rel[a * n + b], drel = mt->dst.rel[da * m + db];
	uint64_t cost = sw > dw ? sw - dw : dw - sw;

	if ((srel & REL_PHYS) && !(drel & REL_PHYS))
		cost += PHYS_SPLIT_PENALTY;
	if ((srel & REL_HIVE) && !(drel & REL_HIVE))
		cost += HIVE_SPLIT_PENALTY;
	return cost;
}

static struct cost placement_cost(const struct matcher *mt, size_t level, size_t i, size_t d)
{
	struct cost c = {
		.ident = mt->ident[i] != (int)d,
		.numa = mt->dst.gpu[d].cpu != mt->src.gpu[i].cpu,
	};

	for (size_t k = 0; k < level; k++) {
		size_t j = mt->placed[k];

		c.weight += pair_cost(mt, i, j, d, (size_t)mt->assign[j]);
	}
	return c;
}

/* Cost so far plus the identity and NUMA misses the domains already force. */
static struct cost lower_bound(const struct matcher *mt, size_t level, struct cost c)
{
	for (size_t j = 0; j < mt->src.n; j++) {
		const uint64_t *dom = dom_at(mt, level, j);

		if (mt->assign[j] >= 0)
			continue;
		if (mt->ident[j] < 0 || !bit_test(dom, (size_t)mt->ident[j]))
			c.ident++;
		if (!bits_intersect(dom, mt->numa_mask + j * mt->words, mt->words))
			c.numa++;
	}
	return c;
}

/* ---- search ----------------------------------------------------------------- */

/* The unplaced source with the fewest candidates (first in source order on ties). */
static size_t pick_source(const struct matcher *mt, size_t level)
{
	size_t best = 0, best_count = SIZE_MAX;

	for (size_t j = 0; j < mt->src.n; j++) {
		size_t c;

		if (mt->assign[j] >= 0)
			continue;
		c = bits_count(dom_at(mt, level, j), mt->words);
		if (c < best_count) {
			best = j;
			best_count = c;
		}
	}
	return best;
}

static int compare_candidates(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;
	int c = cost_cmp(&x->delta, &y->delta);

	if (c)
		return c;
	if (x->fit != y->fit)
		return x->fit < y->fit ? -1 : 1;
	return (x->d > y->d) - (x->d < y->d);
}

/* Unplaced sources on source i's physical GPU, i included. */
static size_t unplaced_partitions(const struct matcher *mt, size_t i)
{
	size_t n = mt->src.n, c = 0;

	for (size_t j = 0; j < n; j++)
		if (mt->assign[j] < 0 && (j == i || (mt->src.rel[i * n + j] & REL_PHYS)))
			c++;
	return c;
}

/*
 * Best fit among equally cheap candidates: a physical GPU whose free
 * candidates hold the rest of the source's physical GPU with the least room
 * to spare, else the one that falls shortest. Without it the first source of
 * a physical GPU takes the lowest free one, which may be a complete GPU that
 * a later source GPU needed whole.
 */
static uint64_t physical_fit(const struct matcher *mt, const uint64_t *dom, size_t need, size_t d)
{
	const uint64_t *phys = mt->phys_mask + d * mt->words;
	size_t avail = 0;

	for (size_t w = 0; w < mt->words; w++)
		avail += (size_t)__builtin_popcountll(dom[w] & phys[w]);
	return avail >= need ? avail - need : (1ULL << 32) + need - avail;
}

static size_t order_candidates(struct matcher *mt, size_t level, size_t i, struct candidate *out)
{
	const uint64_t *dom = dom_at(mt, level, i);
	size_t k = 0, need = unplaced_partitions(mt, i);

	for_each_bit(d, dom, mt->words)
	{
		out[k].d = (uint32_t)d;
		out[k].delta = placement_cost(mt, level, i, d);
		out[k].fit = physical_fit(mt, dom, need, d);
		k++;
	}
	qsort(out, k, sizeof(*out), compare_candidates);
	return k;
}

/* Domains and matching at level + 1 after source i took destination d. */
static bool propagate(struct matcher *mt, size_t level, size_t i, size_t d)
{
	size_t n = mt->src.n;

	memcpy(dom_at(mt, level + 1, 0), dom_at(mt, level, 0), n * mt->words * sizeof(uint64_t));
	for (size_t j = 0; j < n; j++) {
		uint64_t *dom = dom_at(mt, level + 1, j);
		unsigned int cls = mt->pair_class[i * n + j];

		if (mt->assign[j] >= 0)
			continue;
		if (cls) {
			const uint64_t *ok = allowed_at(mt, cls, d);

			for (size_t w = 0; w < mt->words; w++)
				dom[w] &= ok[w];
		}
		bit_clear(dom, d);
		if (!bits_count(dom, mt->words))
			return false;
	}
	return complete_matching(mt, level + 1) < 0;
}

static void record_solution(struct matcher *mt, struct cost cost)
{
	if (mt->have_best && cost_cmp(&cost, &mt->best_cost) >= 0)
		return;
	if (!mt->have_best)
		mt->steps_at_first = mt->steps;
	memcpy(mt->best, mt->assign, mt->src.n * sizeof(int));
	mt->best_cost = cost;
	mt->have_best = true;
	if (cost_cmp(&cost, &mt->root_bound) <= 0)
		mt->stop = true;
}

static bool improvement_exhausted(const struct matcher *mt)
{
	return mt->have_best && mt->steps - mt->steps_at_first >= IMPROVE_STEPS;
}

static void search(struct matcher *mt, size_t level, struct cost cost)
{
	struct candidate *cands = mt->cands + level * mt->dst.n;
	size_t i, n_cands;

	if (level == mt->src.n) {
		record_solution(mt, cost);
		return;
	}
	i = pick_source(mt, level);
	n_cands = order_candidates(mt, level, i, cands);
	mt->placed[level] = (uint32_t)i;
	for (size_t k = 0; k < n_cands && !mt->stop; k++) {
		struct cost next = cost_add(cost, &cands[k].delta);
		struct cost bound;

		/* Candidates are sorted by added cost: the rest cannot do better. */
		if (mt->have_best && cost_cmp(&next, &mt->best_cost) >= 0)
			break;
		if (improvement_exhausted(mt)) {
			mt->stop = true;
			break;
		}
		mt->steps++;
		mt->assign[i] = (int)cands[k].d;
		if (!propagate(mt, level, i, cands[k].d))
			continue;
		bound = lower_bound(mt, level + 1, next);
		if (mt->have_best && cost_cmp(&bound, &mt->best_cost) >= 0)
			continue;
		search(mt, level + 1, next);
	}
	mt->assign[i] = -1;
}

/* ---- groups: sources that must land in one place --------------------------- */

static bool xgmi_pair(const struct side *s, size_t a, size_t b)
{
	return a != b && (s->rank[a * s->n + b] == RANK_XGMI || s->rank[b * s->n + a] == RANK_XGMI);
}

/* Connected components of the xGMI links, numbered in node order; returns their count. */
static size_t xgmi_components(const struct side *s, int *comp, int *stack)
{
	size_t count = 0;

	for (size_t i = 0; i < s->n; i++)
		comp[i] = -1;
	for (size_t i = 0; i < s->n; i++) {
		size_t top = 0;

		if (comp[i] >= 0)
			continue;
		comp[i] = (int)count;
		stack[top++] = (int)i;
		while (top) {
			size_t a = (size_t)stack[--top];

			for (size_t b = 0; b < s->n; b++) {
				if (comp[b] >= 0 || !xgmi_pair(s, a, b))
					continue;
				comp[b] = (int)count;
				stack[top++] = (int)b;
			}
		}
		count++;
	}
	return count;
}

static struct place *find_place(struct matcher *mt, enum group_kind kind, int key)
{
	struct place *p;

	for (size_t k = 0; k < mt->n_places; k++)
		if (mt->places[k].kind == kind && mt->places[k].key == key)
			return &mt->places[k];
	p = &mt->places[mt->n_places];
	p->kind = kind;
	p->key = key;
	p->mask = mt->place_masks + mt->n_places * mt->words;
	mt->n_places++;
	return p;
}

/* Destination CPU nodes and xGMI components. */
static void build_places(struct matcher *mt)
{
	xgmi_components(&mt->dst, mt->dst_comp, mt->stack);
	for (size_t d = 0; d < mt->dst.n; d++) {
		if (mt->dst.gpu[d].cpu >= 0)
			bit_set(find_place(mt, GROUP_NUMA, mt->dst.gpu[d].cpu)->mask, d);
		bit_set(find_place(mt, GROUP_XGMI, mt->dst_comp[d])->mask, d);
	}
}

/* How much a group likes a place: identity kept, CPU node index kept, low node index. */
struct place_score {
	size_t ident;
	size_t numa;
	size_t first;
};

static struct place_score score_place(const struct matcher *mt, const struct group *g,
				      const struct place *p)
{
	struct place_score sc = {.first = SIZE_MAX};

	for (size_t k = 0; k < g->n_members; k++) {
		size_t i = g->members[k];
		const uint64_t *unary = mt->unary + i * mt->words;
		int id = mt->ident[i];

		if (id >= 0 && bit_test(p->mask, (size_t)id) && bit_test(unary, (size_t)id))
			sc.ident++;
		if (bits_intersect3(unary, p->mask, mt->numa_mask + i * mt->words, mt->words))
			sc.numa++;
		for (size_t w = 0; w < mt->words && sc.first == SIZE_MAX; w++)
			if (unary[w] & p->mask[w])
				sc.first = w * 64 + (size_t)__builtin_ctzll(unary[w] & p->mask[w]);
	}
	return sc;
}

static bool score_better(const struct place_score *a, const struct place_score *b)
{
	if (a->ident != b->ident)
		return a->ident > b->ident;
	if (a->numa != b->numa)
		return a->numa > b->numa;
	return a->first < b->first;
}

/* Number of destinations in the place some member could use. */
static size_t place_capacity(const struct matcher *mt, const struct group *g, const struct place *p)
{
	size_t c = 0;

	for (size_t w = 0; w < mt->words; w++) {
		uint64_t any = 0;

		for (size_t k = 0; k < g->n_members; k++)
			any |= mt->unary[g->members[k] * mt->words + w];
		c += (size_t)__builtin_popcountll(any & p->mask[w]);
	}
	return c;
}

/* Places the group could fill, preferred first (insertion sort: there are few). */
static void rank_places(struct matcher *mt, struct group *g)
{
	for (size_t p = 0; p < mt->n_places; p++) {
		const struct place *pl = &mt->places[p];
		struct place_score sc;
		size_t k;

		if (pl->kind != g->kind || place_capacity(mt, g, pl) < g->n_members)
			continue;
		sc = score_place(mt, g, pl);
		for (k = g->n_places; k > 0; k--) {
			struct place_score prev = score_place(mt, g, &mt->places[g->places[k - 1]]);

			if (!score_better(&sc, &prev))
				break;
			g->places[k] = g->places[k - 1];
		}
		g->places[k] = (uint32_t)p;
		g->n_places++;
	}
}

static void add_group(struct matcher *mt, enum group_kind kind, int key, const int *of,
		      size_t *used_members)
{
	struct group *g = &mt->groups[mt->n_groups];
	size_t n = 0;

	for (size_t i = 0; i < mt->src.n; i++)
		n += of[i] == key;
	if (n < 2)
		return;
	g->kind = kind;
	g->key = key;
	g->members = mt->group_members + *used_members;
	for (size_t i = 0; i < mt->src.n; i++)
		if (of[i] == key)
			g->members[g->n_members++] = (uint32_t)i;
	*used_members += n;
	g->places = mt->group_places + mt->n_groups * mt->n_places;
	rank_places(mt, g);
	mt->n_groups++;
}

/* Is `key` the first occurrence in of[0..i]? */
static bool first_with(const int *of, size_t i, int key)
{
	for (size_t j = 0; j < i; j++)
		if (of[j] == key)
			return false;
	return true;
}

/* NUMA groups (when checked) and xGMI groups of two or more sources. */
static void build_groups(struct matcher *mt)
{
	size_t used = 0;

	for (size_t i = 0; i < mt->src.n; i++)
		mt->src_cpu[i] = mt->src.gpu[i].cpu;
	for (size_t i = 0; i < mt->src.n && mt->checks->numa; i++)
		if (mt->src_cpu[i] >= 0 && first_with(mt->src_cpu, i, mt->src_cpu[i]))
			add_group(mt, GROUP_NUMA, mt->src_cpu[i], mt->src_cpu, &used);
	xgmi_components(&mt->src, mt->src_comp, mt->stack);
	for (size_t i = 0; i < mt->src.n; i++)
		if (first_with(mt->src_comp, i, mt->src_comp[i]))
			add_group(mt, GROUP_XGMI, mt->src_comp[i], mt->src_comp, &used);
}

/*
 * Level-0 domains: per-GPU candidates inside the places chosen for groups
 * [0, upto). Returns -1 if every source still has a destination of its own
 * (complete matching), else a source that has none.
 */
static long restrict_domains(struct matcher *mt, size_t upto)
{
	memcpy(dom_at(mt, 0, 0), mt->unary, mt->src.n * mt->words * sizeof(uint64_t));
	for (size_t k = 0; k < upto; k++) {
		const struct group *g = &mt->groups[k];
		const uint64_t *mask = mt->places[g->places[g->chosen]].mask;

		for (size_t i = 0; i < g->n_members; i++) {
			uint64_t *dom = dom_at(mt, 0, g->members[i]);

			for (size_t w = 0; w < mt->words; w++)
				dom[w] &= mask[w];
			if (!bits_count(dom, mt->words))
				return (long)g->members[i];
		}
	}
	return complete_matching(mt, 0);
}

static void search_placement(struct matcher *mt)
{
	struct cost bound = lower_bound(mt, 0, (struct cost){0});

	if (mt->have_best && cost_cmp(&bound, &mt->best_cost) >= 0)
		return;
	search(mt, 0, (struct cost){0});
}

/*
 * Chooses a place for every group, in preference order, before any single
 * GPU: GPUs that must stay together are then never spread over places one
 * permutation at a time.
 */
static void place_groups(struct matcher *mt, size_t k)
{
	struct group *g = &mt->groups[k];

	if (k == mt->n_groups) {
		search_placement(mt);
		return;
	}
	for (g->chosen = 0; g->chosen < g->n_places && !mt->stop; g->chosen++) {
		if (improvement_exhausted(mt)) {
			mt->stop = true;
			break;
		}
		if (restrict_domains(mt, k + 1) < 0)
			place_groups(mt, k + 1);
	}
}

/* ---- explaining a failed search ------------------------------------------- */

/* Some candidate of i and some candidate of j satisfy constraint class cls. */
static bool pair_satisfiable(const struct matcher *mt, size_t i, size_t j, unsigned int cls)
{
	for_each_bit(d, mt->unary + i * mt->words, mt->words)
	{
		if (bits_intersect(mt->unary + j * mt->words, allowed_at(mt, cls, d), mt->words))
			return true;
	}
	return false;
}

/* Candidate pair of i and j with the strongest links, to show what was closest. */
static void closest_pair(const struct matcher *mt, size_t i, size_t j, size_t *bi, size_t *bj)
{
	size_t m = mt->dst.n;
	int best = -1;

	*bi = *bj = 0;
	for_each_bit(d, mt->unary + i * mt->words, mt->words)
	{
		for_each_bit(e, mt->unary + j * mt->words, mt->words)
		{
			int score = mt->dst.rank[d * m + e] + mt->dst.rank[e * m + d];

			if (d != e && score > best) {
				best = score;
				*bi = d;
				*bj = e;
			}
		}
	}
}

static void explain_link_pair(const struct matcher *mt, size_t i, size_t j, struct msg *out)
{
	const struct kfd_node *si = mt->src.gpu[i].node, *sj = mt->src.gpu[j].node;
	const struct kfd_link *fwd = topo_io_link(si, sj->index),
			      *back = topo_io_link(sj, si->index);
	const struct kfd_link *shown = link_rank(fwd) >= link_rank(back) ? fwd : back;
	size_t di, dj;

	closest_pair(mt, i, j, &di, &dj);
	msg_add(out, "source GPUs ");
	msg_gpu(out, &mt->src.gpu[i]);
	msg_add(out, " and ");
	msg_gpu(out, &mt->src.gpu[j]);
	msg_add(out, " are linked by ");
	msg_link(out, shown);
	msg_add(out, "; no destination pair among their candidates keeps that link: best tried ");
	msg_gpu(out, &mt->dst.gpu[di]);
	msg_add(out, " and ");
	msg_gpu(out, &mt->dst.gpu[dj]);
	fwd = topo_io_link(mt->dst.gpu[di].node, mt->dst.gpu[dj].node->index);
	back = topo_io_link(mt->dst.gpu[dj].node, mt->dst.gpu[di].node->index);
	msg_add(out, " linked by %s", link_type_name(fwd));
	if (link_rank(fwd) != link_rank(back) || (fwd && back && fwd->type != back->type))
		msg_add(out, "/%s", link_type_name(back));
}

static void explain_numa_pair(const struct matcher *mt, size_t i, size_t j, struct msg *out)
{
	msg_add(out, "source GPUs ");
	msg_gpu(out, &mt->src.gpu[i]);
	msg_add(out, " and ");
	msg_gpu(out, &mt->src.gpu[j]);
	msg_add(out,
		" share CPU node %d; no destination pair among their candidates shares a CPU node "
		"(KFD_NUMA_CHECK=0 disables this check)",
		mt->src.gpu[i].cpu);
}

/* A single pair of sources whose candidates cannot satisfy their pair rule. */
static bool explain_pairs(const struct matcher *mt, struct msg *out)
{
	size_t n = mt->src.n;

	for (size_t i = 0; i < n; i++) {
		for (size_t j = i + 1; j < n; j++) {
			unsigned int cls = mt->pair_class[i * n + j];

			if (!cls || pair_satisfiable(mt, i, j, cls))
				continue;
			if ((cls & ~CLASS_NUMA) && !pair_satisfiable(mt, i, j, cls & ~CLASS_NUMA))
				explain_link_pair(mt, i, j, out);
			else
				explain_numa_pair(mt, i, j, out);
			return true;
		}
	}
	return false;
}

/* Can the group alone be matched into the place (other sources ignored)? */
static bool group_fits(struct matcher *mt, const struct group *g, const struct place *p)
{
	size_t level = mt->src.n; /* the last level is free once the search is over */

	for (size_t d = 0; d < mt->dst.n; d++)
		mt->owner[d] = -1;
	for (size_t k = 0; k < g->n_members; k++) {
		uint64_t *dom = dom_at(mt, level, g->members[k]);
		const uint64_t *unary = mt->unary + g->members[k] * mt->words;

		for (size_t w = 0; w < mt->words; w++)
			dom[w] = unary[w] & p->mask[w];
	}
	for (size_t k = 0; k < g->n_members; k++) {
		memset(mt->visited, 0, mt->dst.n);
		if (!augment(mt, level, g->members[k]))
			return false;
	}
	return true;
}

static bool group_fits_somewhere(struct matcher *mt, const struct group *g)
{
	for (size_t p = 0; p < mt->n_places; p++)
		if (mt->places[p].kind == g->kind && group_fits(mt, g, &mt->places[p]))
			return true;
	return false;
}

/* A group that fits in no place even on its own. */
static bool explain_groups(struct matcher *mt, struct msg *out)
{
	for (size_t k = 0; k < mt->n_groups; k++) {
		const struct group *g = &mt->groups[k];

		if (group_fits_somewhere(mt, g))
			continue;
		msg_add(out, "source GPUs ");
		for (size_t i = 0; i < g->n_members; i++) {
			msg_add(out, "%s", i ? ", " : "");
			msg_gpu(out, &mt->src.gpu[g->members[i]]);
		}
		if (g->kind == GROUP_NUMA)
			msg_add(out,
				" share CPU node %d; no destination CPU node has compatible GPUs "
				"for "
				"all of them (KFD_NUMA_CHECK=0 disables this check)",
				g->key);
		else
			msg_add(out, " are connected by xGMI; no destination xGMI hive has "
				     "compatible GPUs for all of them");
		return true;
	}
	return false;
}

static void msg_group(struct msg *out, const struct matcher *mt, const struct group *g)
{
	if (g->kind == GROUP_NUMA)
		msg_add(out, "on CPU node %d (", g->key);
	else
		msg_add(out, "xGMI-connected (");
	for (size_t i = 0; i < g->n_members; i++) {
		msg_add(out, "%s", i ? ", " : "");
		msg_gpu(out, &mt->src.gpu[g->members[i]]);
	}
	msg_add(out, ")");
}

/* Every group fits somewhere alone, but no choice of places fits them all. */
static bool explain_group_conflict(const struct matcher *mt, struct msg *out)
{
	if (mt->n_groups < 2 || mt->steps)
		return false;
	msg_add(out, "source GPU groups fit the destination one by one but not together:");
	for (size_t k = 0; k < mt->n_groups; k++) {
		msg_add(out, "%s", k ? "; " : " ");
		msg_group(out, mt, &mt->groups[k]);
	}
	if (mt->checks->numa)
		msg_add(out, " (KFD_NUMA_CHECK=0 drops the CPU node groups)");
	return true;
}

static void explain_structure(struct matcher *mt, struct msg *out)
{
	size_t n = mt->src.n, k = 0;

	if (explain_pairs(mt, out) || explain_groups(mt, out) || explain_group_conflict(mt, out))
		return;
	msg_add(out, "no mapping keeps the links%s of source GPUs ",
		mt->checks->numa ? " and shared CPU nodes" : "");
	for (size_t i = 0; i < n; i++) {
		bool constrained = false;

		for (size_t j = 0; j < n && !constrained; j++)
			constrained = i != j && mt->pair_class[i * n + j];
		if (!constrained)
			continue;
		msg_add(out, "%s", k++ ? ", " : "");
		msg_gpu(out, &mt->src.gpu[i]);
	}
	msg_add(out, " (searched %llu assignments)", (unsigned long long)mt->steps);
}

/* ---- entry points ---------------------------------------------------------- */

/* Consecutive node indexes as ranges: "2-5", "2-5, 9". */
static void msg_node_ranges(struct msg *out, const uint32_t *idx, size_t n)
{
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && idx[j] == idx[j - 1] + 1; j++)
			;
		msg_add(out, "%s%u", i ? ", " : "", idx[i]);
		if (j - i > 1)
			msg_add(out, "-%u", idx[j - 1]);
	}
}

/*
 * The GPU nodes of the destination topology that the default destination
 * set skipped, grouped by why: "; not usable: GPU nodes 2-9 (no gpu_id:
 * ...)". Nothing when the destinations were listed (a listed node that is
 * not usable is an error before the match).
 */
static void explain_skipped(const struct matcher *mt, struct msg *out)
{
	const struct kfd_topology *topo = mt->dst.topo;
	uint32_t *idx;
	bool first = true;

	if (mt->dst.listed || !topo->n_nodes)
		return;
	idx = calloc(topo->n_nodes, sizeof(*idx));
	if (!idx)
		return;
	for (int kind = 0; kind < UNUSABLE_KINDS; kind++) {
		size_t n = 0;

		for (size_t i = 0; i < topo->n_nodes; i++)
			if (topo->nodes[i].is_gpu && (int)gpu_unusable(&topo->nodes[i]) == kind)
				idx[n++] = topo->nodes[i].index;
		if (!n)
			continue;
		msg_add(out, "%s GPU node%s ", first ? "; not usable:" : ",", n == 1 ? "" : "s");
		msg_node_ranges(out, idx, n);
		msg_add(out, " (%s)", unusable_why[kind]);
		first = false;
	}
	free(idx);
}

static void explain_too_few(const struct matcher *mt, struct msg *out)
{
	msg_add(out, "checkpoint has %zu GPU%s, only %zu destination GPU%s usable", mt->src.n,
		mt->src.n == 1 ? "" : "s", mt->dst.n, mt->dst.n == 1 ? " is" : "s are");
	for (size_t d = 0; d < mt->dst.n; d++) {
		msg_add(out, "%s", d ? ", " : ": ");
		msg_gpu(out, &mt->dst.gpu[d]);
	}
	explain_skipped(mt, out);
}

static int fill_result(const struct matcher *mt, struct match_result *res)
{
	res->map = calloc(mt->src.n ? mt->src.n : 1, sizeof(*res->map));
	if (!res->map)
		return -ENOMEM;
	for (size_t i = 0; i < mt->src.n; i++) {
		const struct kfd_node *s = mt->src.gpu[i].node;
		const struct kfd_node *d = mt->dst.gpu[mt->best[i]].node;

		res->map[i] = (struct match_pair){
			.src_node = s->index,
			.src_gpu_id = s->gpu_id,
			.src_render_minor = (uint32_t)s->props.drm_render_minor,
			.dst_node = d->index,
			.dst_gpu_id = d->gpu_id,
			.dst_render_minor = (uint32_t)d->props.drm_render_minor,
		};
	}
	res->n_map = mt->src.n;
	res->compatible = true;
	return 0;
}

/* Runs the checks and the search; 0 with res->compatible set or the reason written. */
static int solve(struct matcher *mt, struct match_result *res, struct msg *reason)
{
	long unmatched;

	if (mt->src.n > mt->dst.n) {
		explain_too_few(mt, reason);
		return 0;
	}
	if (!build_domains(mt, reason))
		return 0;
	unmatched = restrict_domains(mt, 0);
	if (unmatched >= 0) {
		explain_hall(mt, (size_t)unmatched, reason);
		return 0;
	}
	mt->root_bound = lower_bound(mt, 0, (struct cost){0});
	build_places(mt);
	build_groups(mt);
	place_groups(mt, 0);
	res->search_steps = mt->steps;
	if (!mt->have_best) {
		explain_structure(mt, reason);
		return 0;
	}
	return fill_result(mt, res);
}

static int prepare(struct matcher *mt, const struct match_request *req, struct msg *err)
{
	int ret;

	if (!req->src || !req->dst) {
		msg_add(err, "no %s topology", req->src ? "destination" : "source");
		return -EINVAL;
	}
	mt->checks = &req->checks;
	ret = collect_side(&mt->src, req->src, req->src_nodes, req->n_src_nodes, true, err);
	if (!ret)
		ret = collect_side(&mt->dst, req->dst, req->dst_nodes, req->n_dst_nodes, false,
				   err);
	if (!ret)
		ret = build_side_tables(&mt->src);
	if (!ret)
		ret = build_side_tables(&mt->dst);
	if (!ret)
		ret = alloc_matcher(mt);
	if (ret)
		return ret;
	build_pair_tables(mt);
	build_preference_tables(mt);
	return 0;
}

int topo_match(const struct match_request *req, struct match_result *res)
{
	struct matcher mt = {0};
	struct msg reason;
	int ret;

	memset(res, 0, sizeof(*res));
	msg_init(&reason, res->reason, sizeof(res->reason));
	ret = prepare(&mt, req, &reason);
	if (ret)
		goto out;
	ret = solve(&mt, res, &reason);
out:
	if (ret == -ENOMEM && !reason.len)
		msg_add(&reason, "out of memory");
	free_matcher(&mt);
	return ret;
}

void match_result_free(struct match_result *res)
{
	if (!res)
		return;
	free(res->map);
	res->map = NULL;
	res->n_map = 0;
}
