// SPDX-License-Identifier: MIT
/* Why the matcher found no map, in words (match_int.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology/match_int.h"

/* ---- explaining a failed mt_search ------------------------------------------- */

/* Some candidate of i and some candidate of j satisfy constraint class cls. */
static bool pair_satisfiable(const struct matcher *mt, size_t i, size_t j, unsigned int cls)
{
	for_each_bit(d, mt->unary + i * mt->words, mt->words)
	{
		if (bits_intersect(mt->unary + j * mt->words, mt_allowed_at(mt, cls, d), mt->words))
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
	const struct kfd_link *shown = mt_link_rank(fwd) >= mt_link_rank(back) ? fwd : back;
	size_t di, dj;

	closest_pair(mt, i, j, &di, &dj);
	mt_msg_add(out, "source GPUs ");
	mt_msg_gpu(out, &mt->src.gpu[i]);
	mt_msg_add(out, " and ");
	mt_msg_gpu(out, &mt->src.gpu[j]);
	mt_msg_add(out, " are linked by ");
	mt_msg_link(out, shown);
	mt_msg_add(out,
		   "; no destination pair among their candidates keeps that link: best tried ");
	mt_msg_gpu(out, &mt->dst.gpu[di]);
	mt_msg_add(out, " and ");
	mt_msg_gpu(out, &mt->dst.gpu[dj]);
	fwd = topo_io_link(mt->dst.gpu[di].node, mt->dst.gpu[dj].node->index);
	back = topo_io_link(mt->dst.gpu[dj].node, mt->dst.gpu[di].node->index);
	mt_msg_add(out, " linked by %s", mt_link_type_name(fwd));
	if (mt_link_rank(fwd) != mt_link_rank(back) || (fwd && back && fwd->type != back->type))
		mt_msg_add(out, "/%s", mt_link_type_name(back));
}

static void explain_numa_pair(const struct matcher *mt, size_t i, size_t j, struct msg *out)
{
	mt_msg_add(out, "source GPUs ");
	mt_msg_gpu(out, &mt->src.gpu[i]);
	mt_msg_add(out, " and ");
	mt_msg_gpu(out, &mt->src.gpu[j]);
	mt_msg_add(
		out,
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
	size_t level = mt->src.n; /* the last level is free once the mt_search is over */

	for (size_t d = 0; d < mt->dst.n; d++)
		mt->owner[d] = -1;
	for (size_t k = 0; k < g->n_members; k++) {
		uint64_t *dom = mt_dom_at(mt, level, g->members[k]);
		const uint64_t *unary = mt->unary + g->members[k] * mt->words;

		for (size_t w = 0; w < mt->words; w++)
			dom[w] = unary[w] & p->mask[w];
	}
	for (size_t k = 0; k < g->n_members; k++) {
		memset(mt->visited, 0, mt->dst.n);
		if (!mt_augment(mt, level, g->members[k]))
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
		mt_msg_add(out, "source GPUs ");
		for (size_t i = 0; i < g->n_members; i++) {
			mt_msg_add(out, "%s", i ? ", " : "");
			mt_msg_gpu(out, &mt->src.gpu[g->members[i]]);
		}
		if (g->kind == GROUP_NUMA)
			mt_msg_add(
				out,
				" share CPU node %d; no destination CPU node has compatible GPUs "
				"for "
				"all of them (KFD_NUMA_CHECK=0 disables this check)",
				g->key);
		else
			mt_msg_add(out, " are connected by xGMI; no destination xGMI hive has "
					"compatible GPUs for all of them");
		return true;
	}
	return false;
}

static void msg_group(struct msg *out, const struct matcher *mt, const struct group *g)
{
	if (g->kind == GROUP_NUMA)
		mt_msg_add(out, "on CPU node %d (", g->key);
	else
		mt_msg_add(out, "xGMI-connected (");
	for (size_t i = 0; i < g->n_members; i++) {
		mt_msg_add(out, "%s", i ? ", " : "");
		mt_msg_gpu(out, &mt->src.gpu[g->members[i]]);
	}
	mt_msg_add(out, ")");
}

/* Every group fits somewhere alone, but no choice of places fits them all. */
static bool explain_group_conflict(const struct matcher *mt, struct msg *out)
{
	if (mt->n_groups < 2 || mt->steps)
		return false;
	mt_msg_add(out, "source GPU groups fit the destination one by one but not together:");
	for (size_t k = 0; k < mt->n_groups; k++) {
		mt_msg_add(out, "%s", k ? "; " : " ");
		msg_group(out, mt, &mt->groups[k]);
	}
	if (mt->checks->numa)
		mt_msg_add(out, " (KFD_NUMA_CHECK=0 drops the CPU node groups)");
	return true;
}

void mt_explain_structure(struct matcher *mt, struct msg *out)
{
	size_t n = mt->src.n, k = 0;

	if (explain_pairs(mt, out) || explain_groups(mt, out) || explain_group_conflict(mt, out))
		return;
	mt_msg_add(out, "no mapping keeps the links%s of source GPUs ",
		   mt->checks->numa ? " and shared CPU nodes" : "");
	for (size_t i = 0; i < n; i++) {
		bool constrained = false;

		for (size_t j = 0; j < n && !constrained; j++)
			constrained = i != j && mt->pair_class[i * n + j];
		if (!constrained)
			continue;
		mt_msg_add(out, "%s", k++ ? ", " : "");
		mt_msg_gpu(out, &mt->src.gpu[i]);
	}
	mt_msg_add(out, " (searched %llu assignments)", (unsigned long long)mt->steps);
}
