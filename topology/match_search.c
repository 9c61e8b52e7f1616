// SPDX-License-Identifier: MIT
/* The matcher's search: domains, all-different, cost, backtracking (match_int.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology/match_int.h"

/* ---- unary checks: per-GPU domain ----------------------------------------- */

/* Structural rules that involve one GPU: its link to the CPU and CPU access to its VRAM. */
static int check_cpu_attachment(const struct gpu_info *s, const struct gpu_info *d, int failed,
				char *why, size_t whylen)
{
	int n = 0;

	if (mt_link_rank(d->cpu_link) < mt_link_rank(s->cpu_link)) {
		if (why && whylen && !failed && !n) {
			struct msg m;

			mt_msg_init(&m, why, whylen);
			mt_msg_add(&m, "link to CPU: source ");
			mt_msg_link(&m, s->cpu_link);
			mt_msg_add(&m, ", destination ");
			mt_msg_link(&m, d->cpu_link);
			mt_msg_add(&m, " (must not be weaker)");
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
	mt_msg_add(out, "source GPU ");
	mt_msg_gpu(out, &mt->src.gpu[i]);
	mt_msg_add(out, ": no compatible destination; best candidate ");
	mt_msg_gpu(out, &mt->dst.gpu[best]);
	mt_msg_add(out, ": %s", best_why);
}

/* Per-GPU candidates. False (with the reason) if a source has none. */
bool mt_build_domains(struct matcher *mt, struct msg *out)
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

bool mt_augment(struct matcher *mt, size_t level, size_t j)
{
	int *match = mt->match + level * mt->src.n;

	for_each_bit(d, mt_dom_at(mt, level, j), mt->words)
	{
		if (mt->visited[d])
			continue;
		mt->visited[d] = 1;
		if (mt->owner[d] < 0 || mt_augment(mt, level, (size_t)mt->owner[d])) {
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
long mt_complete_matching(struct matcher *mt, size_t level)
{
	size_t n = mt->src.n;
	int *cur = mt->match + level * n;
	const int *prev = level ? cur - n : NULL;

	for (size_t d = 0; d < mt->dst.n; d++)
		mt->owner[d] = -1;
	for (size_t j = 0; j < n; j++) {
		int p = prev ? prev[j] : -1;

		cur[j] = -1;
		if (mt->assign[j] >= 0 || p < 0 || !bit_test(mt_dom_at(mt, level, j), (size_t)p))
			continue;
		cur[j] = p;
		mt->owner[p] = (int)j;
	}
	for (size_t j = 0; j < n; j++) {
		if (mt->assign[j] >= 0 || cur[j] >= 0)
			continue;
		memset(mt->visited, 0, mt->dst.n);
		if (!mt_augment(mt, level, j))
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
	mt_msg_add(out, " (source ");
	mt_msg_gpu(out, &mt->src.gpu[i]);
	mt_msg_add(out, " cannot use ");
	mt_msg_gpu(out, &mt->dst.gpu[best]);
	mt_msg_add(out, ": %s)", best_why);
}

/*
 * Hall violation found by a failed augmenting path from source j: the
 * sources of the alternating tree can only use the destinations it visited,
 * and there are fewer of those. Counts and an example come first, so that
 * they survive when the lists do not fit.
 */
void mt_explain_hall(const struct matcher *mt, size_t j, struct msg *out)
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
	mt_msg_add(out, "%zu source GPUs compete for %zu compatible destination GPU%s", n_src,
		   n_dst, n_dst == 1 ? "" : "s");
	explain_hall_outsider(mt, first, out);
	mt_msg_add(out, ": sources ");
	for (size_t i = 0, k = 0; i < mt->src.n; i++) {
		if (!in_hall_set(mt, j, i))
			continue;
		mt_msg_add(out, "%s", k++ ? ", " : "");
		mt_msg_gpu(out, &mt->src.gpu[i]);
	}
	mt_msg_add(out, "; destinations ");
	for (size_t d = 0, k = 0; d < mt->dst.n; d++) {
		if (!mt->visited[d])
			continue;
		mt_msg_add(out, "%s", k++ ? ", " : "");
		mt_msg_gpu(out, &mt->dst.gpu[d]);
	}
}

/* ---- cost ------------------------------------------------------------------- */

int mt_cost_cmp(const struct cost *a, const struct cost *b)
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
struct cost mt_lower_bound(const struct matcher *mt, size_t level, struct cost c)
{
	for (size_t j = 0; j < mt->src.n; j++) {
		const uint64_t *dom = mt_dom_at(mt, level, j);

		if (mt->assign[j] >= 0)
			continue;
		if (mt->ident[j] < 0 || !bit_test(dom, (size_t)mt->ident[j]))
			c.ident++;
		if (!bits_intersect(dom, mt->numa_mask + j * mt->words, mt->words))
			c.numa++;
	}
	return c;
}

/* ---- mt_search ----------------------------------------------------------------- */

/* The unplaced source with the fewest candidates (first in source order on ties). */
static size_t pick_source(const struct matcher *mt, size_t level)
{
	size_t best = 0, best_count = SIZE_MAX;

	for (size_t j = 0; j < mt->src.n; j++) {
		size_t c;

		if (mt->assign[j] >= 0)
			continue;
		c = bits_count(mt_dom_at(mt, level, j), mt->words);
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
	int c = mt_cost_cmp(&x->delta, &y->delta);

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
	const uint64_t *dom = mt_dom_at(mt, level, i);
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

	memcpy(mt_dom_at(mt, level + 1, 0), mt_dom_at(mt, level, 0),
	       n * mt->words * sizeof(uint64_t));
	for (size_t j = 0; j < n; j++) {
		uint64_t *dom = mt_dom_at(mt, level + 1, j);
		unsigned int cls = mt->pair_class[i * n + j];

		if (mt->assign[j] >= 0)
			continue;
		if (cls) {
			const uint64_t *ok = mt_allowed_at(mt, cls, d);

			for (size_t w = 0; w < mt->words; w++)
				dom[w] &= ok[w];
		}
		bit_clear(dom, d);
		if (!bits_count(dom, mt->words))
			return false;
	}
	return mt_complete_matching(mt, level + 1) < 0;
}

static void record_solution(struct matcher *mt, struct cost cost)
{
	if (mt->have_best && mt_cost_cmp(&cost, &mt->best_cost) >= 0)
		return;
	if (!mt->have_best)
		mt->steps_at_first = mt->steps;
	memcpy(mt->best, mt->assign, mt->src.n * sizeof(int));
	mt->best_cost = cost;
	mt->have_best = true;
	if (mt_cost_cmp(&cost, &mt->root_bound) <= 0)
		mt->stop = true;
}

bool mt_improvement_exhausted(const struct matcher *mt)
{
	return mt->have_best && mt->steps - mt->steps_at_first >= IMPROVE_STEPS;
}

void mt_search(struct matcher *mt, size_t level, struct cost cost)
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
		if (mt->have_best && mt_cost_cmp(&next, &mt->best_cost) >= 0)
			break;
		if (mt_improvement_exhausted(mt)) {
			mt->stop = true;
			break;
		}
		mt->steps++;
		mt->assign[i] = (int)cands[k].d;
		if (!propagate(mt, level, i, cands[k].d))
			continue;
		bound = mt_lower_bound(mt, level + 1, next);
		if (mt->have_best && mt_cost_cmp(&bound, &mt->best_cost) >= 0)
			continue;
		mt_search(mt, level + 1, next);
	}
	mt->assign[i] = -1;
}
