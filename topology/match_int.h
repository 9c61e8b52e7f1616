/* SPDX-License-Identifier: MIT */
/*
 * The matcher's inside (topology/match*.c only; match.h is the contract):
 * its types, the bitsets it searches with, and what its files call of
 * each other. match.c: the entry points; match_tables.c: requests, the
 * per-side and matcher tables, messages; match_search.c: domains, the
 * all-different check, cost and the depth-first search; match_groups.c:
 * sources that must land together; match_explain.c: why a search failed.
 * What one file calls of another is named mt_*.
 */
#ifndef AMDGPU_CRIU_MATCH_INT_H
#define AMDGPU_CRIU_MATCH_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "topology/match.h"

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

/*
 * Why a GPU node cannot take part in a match. One wording for a listed node
 * (an error) and for the nodes the default destination set skips (named
 * when too few are left), so both say the same thing.
 */
enum unusable { USABLE = -1, UNUSABLE_UNREADABLE, UNUSABLE_NO_GPU_ID, UNUSABLE_KINDS };
extern const char *const mt_unusable_why[UNUSABLE_KINDS];

/* ---- messages ------------------------------------------------------------- */

struct msg {
	char *buf;
	size_t size;
	size_t len;
};

/* ---- bitsets -------------------------------------------------------------- */

static inline bool bit_test(const uint64_t *set, size_t b)
{
	return (set[b / 64] >> (b % 64)) & 1;
}

static inline void bit_set(uint64_t *set, size_t b)
{
	set[b / 64] |= 1ULL << (b % 64);
}

static inline void bit_clear(uint64_t *set, size_t b)
{
	set[b / 64] &= ~(1ULL << (b % 64));
}

/* First set bit at or after `from`, or words * 64. */
static inline size_t bit_next(const uint64_t *set, size_t words, size_t from)
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

static inline size_t bits_count(const uint64_t *set, size_t words)
{
	size_t c = 0;

	for (size_t w = 0; w < words; w++)
		c += (size_t)__builtin_popcountll(set[w]);
	return c;
}

static inline bool bits_intersect(const uint64_t *a, const uint64_t *b, size_t words)
{
	for (size_t w = 0; w < words; w++)
		if (a[w] & b[w])
			return true;
	return false;
}

static inline bool bits_intersect3(const uint64_t *a, const uint64_t *b, const uint64_t *c,
				   size_t words)
{
	for (size_t w = 0; w < words; w++)
		if (a[w] & b[w] & c[w])
			return true;
	return false;
}

/* match_tables.c */
void mt_msg_init(struct msg *m, char *buf, size_t size);
__attribute__((format(printf, 2, 3))) void mt_msg_add(struct msg *m, const char *fmt, ...);
void mt_msg_gpu(struct msg *m, const struct gpu_info *g);
const char *mt_link_type_name(const struct kfd_link *l);
void mt_msg_link(struct msg *m, const struct kfd_link *l);
enum unusable mt_gpu_unusable(const struct kfd_node *n);
int mt_collect_side(struct side *side, const struct kfd_topology *topo, const uint32_t *list,
		    size_t n_list, bool is_src, struct msg *err);
enum link_rank mt_link_rank(const struct kfd_link *l);
int mt_build_side_tables(struct side *s);
uint64_t *mt_dom_at(const struct matcher *mt, size_t level, size_t i);
const uint64_t *mt_allowed_at(const struct matcher *mt, unsigned int cls, size_t d);
void mt_build_pair_tables(struct matcher *mt);
void mt_build_preference_tables(struct matcher *mt);
int mt_alloc_matcher(struct matcher *mt);
void mt_free_matcher(struct matcher *mt);

/* match_search.c */
bool mt_build_domains(struct matcher *mt, struct msg *out);
bool mt_augment(struct matcher *mt, size_t level, size_t j);
long mt_complete_matching(struct matcher *mt, size_t level);
void mt_explain_hall(const struct matcher *mt, size_t j, struct msg *out);
int mt_cost_cmp(const struct cost *a, const struct cost *b);
struct cost mt_lower_bound(const struct matcher *mt, size_t level, struct cost c);
bool mt_improvement_exhausted(const struct matcher *mt);
void mt_search(struct matcher *mt, size_t level, struct cost cost);

/* match_groups.c */
void mt_build_places(struct matcher *mt);
void mt_build_groups(struct matcher *mt);
long mt_restrict_domains(struct matcher *mt, size_t upto);
void mt_place_groups(struct matcher *mt, size_t k);

/* match_explain.c */
void mt_explain_structure(struct matcher *mt, struct msg *out);

#endif
