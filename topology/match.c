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
 * says which destinations may sit next to it. The search is a depth-first
 * backtracking over sources (fewest candidates first) with
 *   - forward checking: placing a source filters every other domain with
 *     the pair bitsets;
 *   - an all-different check at every node: a complete bipartite matching
 *     of the remaining sources into their domains must exist (repaired by
 *     augmenting paths from the parent's matching), so a choice that starves
 *     a later GPU (e.g. a small-VRAM source taking the only large partition)
 *     is refused at once instead of after exponential backtracking.
 * Without a time or step limit before the first solution, this is complete.
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
 * are tried cheapest first (identity, weight, NUMA, lowest node index), so
 * the first solution is usually optimal; the search stops when a solution
 * reaches the root's lower bound or IMPROVE_STEPS assignments after the
 * first solution (a step count, not a clock: the answer is deterministic).
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
};

struct matcher {
	const struct match_checks *checks;
	struct side src, dst;
	size_t words;	     /* uint64_t words of a destination bitset */
	uint8_t *pair_class; /* [i * n + j]: what j's destination must satisfy next to i's */
	uint64_t *allowed;   /* [(class * m + d) * words]: destinations allowed next to d */
	int *ident;	     /* per source: destination position of the same GPU, or -1 */
	uint64_t *numa_mask; /* [i * words]: destinations on source i's CPU node index */
	uint64_t *scratch;   /* one destination bitset */

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

/* ---- request validation ---------------------------------------------------- */

static int check_listed_node(const struct kfd_topology *topo, uint32_t index, const char *what,
			     struct msg *err)
{
	const struct kfd_node *n = topo_node(topo, index);

	if (!n) {
		msg_add(err, "%s node %u does not exist (topology has %zu nodes)", what, index,
			topo->n_nodes);
		return -ENOENT;
	}
	if (!n->accessible) {
		msg_add(err, "%s node %u cannot be read (not in the device cgroup?)", what, index);
		return -EACCES;
	}
	if (!n->is_gpu) {
		msg_add(err, "%s node %u is not a GPU", what, index);
		return -EINVAL;
	}
	if (!n->gpu_id) {
		msg_add(err, "%s GPU node %u has no gpu_id", what, index);
		return -EINVAL;
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
		} else if (!n->accessible || !n->gpu_id) {
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
	mt->scratch = calloc(w, sizeof(uint64_t));
	mt->dom = calloc((n + 1) * n * w + 1, sizeof(uint64_t));
	mt->match = calloc((n + 1) * n + 1, sizeof(int));
	mt->owner = calloc(m + 1, sizeof(int));
	mt->visited = calloc(m + 1, 1);
	mt->assign = calloc(n + 1, sizeof(int));
	mt->placed = calloc(n + 1, sizeof(uint32_t));
	mt->cands = calloc(n * m + 1, sizeof(struct candidate));
	mt->best = calloc(n + 1, sizeof(int));
	if (!mt->pair_class || !mt->allowed || !mt->ident || !mt->numa_mask || !mt->scratch ||
	    !mt->dom || !mt->match || !mt->owner || !mt->visited || !mt->assign || !mt->placed ||
	    !mt->cands || !mt->best)
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
	free(mt->scratch);
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

/* Level-0 domains. False (with the reason) if a source has no candidate. */
static bool build_domains(struct matcher *mt, struct msg *out)
{
	for (size_t i = 0; i < mt->src.n; i++) {
		uint64_t *dom = dom_at(mt, 0, i);

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

/* Hall violation found by a failed augmenting path from source j. */
static void explain_hall(const struct matcher *mt, size_t j, struct msg *out)
{
	size_t n_src = 0, n_dst = 0;

	msg_add(out, "source GPUs ");
	for (size_t i = 0; i < mt->src.n; i++) {
		bool in_tree = i == j;

		for (size_t d = 0; d < mt->dst.n && !in_tree; d++)
			in_tree = mt->visited[d] && mt->owner[d] == (int)i;
		if (!in_tree)
			continue;
		msg_add(out, "%s", n_src++ ? ", " : "");
		msg_gpu(out, &mt->src.gpu[i]);
	}
	for (size_t d = 0; d < mt->dst.n; d++)
		n_dst += mt->visited[d];
	msg_add(out, " compete for %zu compatible destination GPU%s%s", n_dst,
		n_dst == 1 ? "" : "s", n_dst ? ": " : "");
	n_dst = 0;
	for (size_t d = 0; d < mt->dst.n; d++) {
		if (!mt->visited[d])
			continue;
		msg_add(out, "%s", n_dst++ ? ", " : "");
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
	return (x->d > y->d) - (x->d < y->d);
}

static size_t order_candidates(struct matcher *mt, size_t level, size_t i, struct candidate *out)
{
	size_t k = 0;

	for_each_bit(d, dom_at(mt, level, i), mt->words)
	{
		out[k].d = (uint32_t)d;
		out[k].delta = placement_cost(mt, level, i, d);
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

/* ---- explaining a failed search ------------------------------------------- */

/* Some candidate of i and some candidate of j satisfy constraint class cls. */
static bool pair_satisfiable(const struct matcher *mt, size_t i, size_t j, unsigned int cls)
{
	for_each_bit(d, dom_at(mt, 0, i), mt->words)
	{
		if (bits_intersect(dom_at(mt, 0, j), allowed_at(mt, cls, d), mt->words))
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
	for_each_bit(d, dom_at(mt, 0, i), mt->words)
	{
		for_each_bit(e, dom_at(mt, 0, j), mt->words)
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

/* Can the sources on CPU node `cpu` all be matched into destinations on CPU node `dcpu`? */
static bool numa_group_fits(struct matcher *mt, int cpu, int dcpu)
{
	size_t n = mt->src.n, level = n; /* the last level is free once the search is over */

	for (size_t d = 0; d < mt->dst.n; d++)
		mt->owner[d] = -1;
	for (size_t j = 0; j < n; j++) {
		uint64_t *dom = dom_at(mt, level, j);

		memset(dom, 0, mt->words * sizeof(uint64_t));
		if (mt->src.gpu[j].cpu != cpu)
			continue;
		for_each_bit(d, dom_at(mt, 0, j), mt->words)
		{
			if (mt->dst.gpu[d].cpu == dcpu)
				bit_set(dom, d);
		}
	}
	for (size_t j = 0; j < n; j++) {
		if (mt->src.gpu[j].cpu != cpu)
			continue;
		memset(mt->visited, 0, mt->dst.n);
		if (!augment(mt, level, j))
			return false;
	}
	return true;
}

static bool numa_group_fits_somewhere(struct matcher *mt, int cpu)
{
	for (size_t d = 0; d < mt->dst.n; d++) {
		int dcpu = mt->dst.gpu[d].cpu;

		if (dcpu >= 0 && numa_group_fits(mt, cpu, dcpu))
			return true;
	}
	return false;
}

/* Source i is the first of at least two sources on its CPU node. */
static bool numa_group_leader(const struct matcher *mt, size_t i)
{
	int cpu = mt->src.gpu[i].cpu;
	size_t members = 0;

	if (cpu < 0)
		return false;
	for (size_t j = 0; j < mt->src.n; j++) {
		if (mt->src.gpu[j].cpu != cpu)
			continue;
		if (j < i)
			return false;
		members++;
	}
	return members > 1;
}

static bool explain_numa_groups(struct matcher *mt, struct msg *out)
{
	size_t n = mt->src.n;

	if (!mt->checks->numa)
		return false;
	for (size_t i = 0; i < n; i++) {
		int cpu = mt->src.gpu[i].cpu;
		size_t k = 0;

		if (!numa_group_leader(mt, i) || numa_group_fits_somewhere(mt, cpu))
			continue;
		msg_add(out, "source GPUs ");
		for (size_t j = 0; j < n; j++) {
			if (mt->src.gpu[j].cpu != cpu)
				continue;
			msg_add(out, "%s", k++ ? ", " : "");
			msg_gpu(out, &mt->src.gpu[j]);
		}
		msg_add(out,
			" share CPU node %d; no destination CPU node has compatible GPUs for all "
			"of "
			"them (KFD_NUMA_CHECK=0 disables this check)",
			cpu);
		return true;
	}
	return false;
}

static void explain_structure(struct matcher *mt, struct msg *out)
{
	size_t n = mt->src.n, k = 0;

	if (explain_pairs(mt, out) || explain_numa_groups(mt, out))
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

static void explain_too_few(const struct matcher *mt, struct msg *out)
{
	msg_add(out, "checkpoint has %zu GPU%s, only %zu destination GPU%s usable", mt->src.n,
		mt->src.n == 1 ? "" : "s", mt->dst.n, mt->dst.n == 1 ? " is" : "s are");
	for (size_t d = 0; d < mt->dst.n; d++) {
		msg_add(out, "%s", d ? ", " : ": ");
		msg_gpu(out, &mt->dst.gpu[d]);
	}
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
	unmatched = complete_matching(mt, 0);
	if (unmatched >= 0) {
		explain_hall(mt, (size_t)unmatched, reason);
		return 0;
	}
	mt->root_bound = lower_bound(mt, 0, (struct cost){0});
	search(mt, 0, (struct cost){0});
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
