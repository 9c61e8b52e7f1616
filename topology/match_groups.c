// SPDX-License-Identifier: MIT
/* The matcher's groups: sources that must land in one place (match_int.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology/match_int.h"

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
void mt_build_places(struct matcher *mt)
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
void mt_build_groups(struct matcher *mt)
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
long mt_restrict_domains(struct matcher *mt, size_t upto)
{
	memcpy(mt_dom_at(mt, 0, 0), mt->unary, mt->src.n * mt->words * sizeof(uint64_t));
	for (size_t k = 0; k < upto; k++) {
		const struct group *g = &mt->groups[k];
		const uint64_t *mask = mt->places[g->places[g->chosen]].mask;

		for (size_t i = 0; i < g->n_members; i++) {
			uint64_t *dom = mt_dom_at(mt, 0, g->members[i]);

			for (size_t w = 0; w < mt->words; w++)
				dom[w] &= mask[w];
			if (!bits_count(dom, mt->words))
				return (long)g->members[i];
		}
	}
	return mt_complete_matching(mt, 0);
}

static void search_placement(struct matcher *mt)
{
	struct cost bound = mt_lower_bound(mt, 0, (struct cost){0});

	if (mt->have_best && mt_cost_cmp(&bound, &mt->best_cost) >= 0)
		return;
	mt_search(mt, 0, (struct cost){0});
}

/*
 * Chooses a place for every group, in preference order, before any single
 * GPU: GPUs that must stay together are then never spread over places one
 * permutation at a time.
 */
void mt_place_groups(struct matcher *mt, size_t k)
{
	struct group *g = &mt->groups[k];

	if (k == mt->n_groups) {
		search_placement(mt);
		return;
	}
	for (g->chosen = 0; g->chosen < g->n_places && !mt->stop; g->chosen++) {
		if (mt_improvement_exhausted(mt)) {
			mt->stop = true;
			break;
		}
		if (mt_restrict_domains(mt, k + 1) < 0)
			mt_place_groups(mt, k + 1);
	}
}
