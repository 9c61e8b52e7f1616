// SPDX-License-Identifier: MIT
/*
 * topo_match() against brute force on small random topologies: every
 * injective map is enumerated and checked with an independent reading of
 * the rules in match.h, and its cost computed as match.c documents it.
 * The matcher must find a mapping exactly when one exists, return a valid
 * one, and (these problems are far below the improvement budget) one of
 * minimal cost.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>

#include "topology/match.h"
#include "match_synth.h"

#define MAX_GPUS 7
#define N_CASES	 400

/* Same penalties as match.c. */
#define PHYS_SPLIT_PENALTY 100
#define HIVE_SPLIT_PENALTY 100

struct rng {
	uint64_t state;
};

static uint32_t rng_next(struct rng *r, uint32_t bound)
{
	r->state = r->state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)((r->state >> 33) % bound);
}

/*
 * Two CPU nodes and n GPUs with random CPU, BAR size, VRAM, compute shape,
 * hive (xGMI clique, weight 15 or 30), physical GPU and p2p paths.
 */
static struct kfd_topology *random_topology(struct rng *r, uint32_t n, uint32_t id_base)
{
	struct kfd_topology *t = synth_new(2 + n);

	synth_cpu(t, 0);
	synth_cpu(t, 1);
	for (uint32_t i = 2; i < 2 + n; i++) {
		struct kfd_node *g =
			synth_gpu(t, i, id_base + i, rng_next(r, 2), rng_next(r, 4) != 0);

		g->vram_size = (rng_next(r, 3) ? 64 : 128) * SYNTH_GIB;
		if (!rng_next(r, 6))
			SYNTH_SET(g, simd_count, 208);
		if (!rng_next(r, 8))
			g->io_links[0].type = KFD_IOLINK_XGMI;
		SYNTH_SET(g, unique_id, 0x100 + rng_next(r, 4));
		SYNTH_SET(g, hive_id, rng_next(r, 3));
	}
	for (uint32_t a = 2; a < 2 + n; a++) {
		for (uint32_t b = a + 1; b < 2 + n; b++) {
			uint64_t ha = t->nodes[a].props.hive_id;
			uint32_t w = rng_next(r, 2) ? 15 : 30;

			if (ha && ha == t->nodes[b].props.hive_id) {
				synth_io(t, a, b, KFD_IOLINK_XGMI, w);
				synth_io(t, b, a, KFD_IOLINK_XGMI, w);
			} else if (rng_next(r, 2)) {
				w = rng_next(r, 2) ? 40 : 72;
				synth_p2p(t, a, b, KFD_IOLINK_PCIEXPRESS, w);
				synth_p2p(t, b, a, KFD_IOLINK_PCIEXPRESS, w);
			}
		}
	}
	return t;
}

/* ---- the rules, read independently ----------------------------------------- */

static int rank_of(const struct kfd_link *l)
{
	if (!l)
		return 0;
	return l->type == KFD_IOLINK_XGMI ? 3 : l->type == KFD_IOLINK_PCIEXPRESS ? 2 : 1;
}

static int cpu_rank(const struct kfd_topology *t, const struct kfd_node *g)
{
	int cpu = topo_gpu_cpu_node(t, g);

	return cpu < 0 ? 0 : rank_of(topo_io_link(g, (uint32_t)cpu));
}

static bool gpu_ok(const struct match_request *req, const struct kfd_node *s,
		   const struct kfd_node *d)
{
	if (match_gpu_compat(&req->checks, s, d, NULL, 0))
		return false;
	if (cpu_rank(req->dst, d) < cpu_rank(req->src, s))
		return false;
	return !topo_gpu_cpu_visible(req->src, s) || topo_gpu_cpu_visible(req->dst, d);
}

static bool pair_ok(const struct match_request *req, const struct kfd_node *sa,
		    const struct kfd_node *sb, const struct kfd_node *da, const struct kfd_node *db)
{
	int ca = topo_gpu_cpu_node(req->src, sa), cb = topo_gpu_cpu_node(req->src, sb);
	int ea = topo_gpu_cpu_node(req->dst, da), eb = topo_gpu_cpu_node(req->dst, db);

	if (rank_of(topo_io_link(da, db->index)) < rank_of(topo_io_link(sa, sb->index)))
		return false;
	if (rank_of(topo_io_link(db, da->index)) < rank_of(topo_io_link(sb, sa->index)))
		return false;
	return !req->checks.numa || ca < 0 || ca != cb || (ea >= 0 && ea == eb);
}

struct cost {
	uint64_t ident, weight, numa;
};

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

static uint32_t weight_of(const struct kfd_node *a, const struct kfd_node *b)
{
	const struct kfd_link *l = topo_io_link(a, b->index);

	if (!l)
		l = topo_p2p_link(a, b->index);
	return l ? l->weight : 0;
}

static uint64_t pair_cost(const struct kfd_node *sa, const struct kfd_node *sb,
			  const struct kfd_node *da, const struct kfd_node *db)
{
	uint32_t ws = weight_of(sa, sb), wd = weight_of(da, db);
	uint64_t c = ws > wd ? ws - wd : wd - ws;
	uint64_t hs = sa->props.hive_id, hd = da->props.hive_id;

	if (sa->props.unique_id == sb->props.unique_id &&
	    da->props.unique_id != db->props.unique_id)
		c += PHYS_SPLIT_PENALTY;
	if (hs && hs == sb->props.hive_id && !(hd && hd == db->props.hive_id))
		c += HIVE_SPLIT_PENALTY;
	return c;
}

/* Cost of map[i] = destination node of source i (sources src[0..n)), or false if invalid. */
static bool evaluate(const struct match_request *req, const uint32_t *src, size_t n,
		     const uint32_t *map, struct cost *c)
{
	*c = (struct cost){0};
	for (size_t i = 0; i < n; i++) {
		const struct kfd_node *s = topo_node(req->src, src[i]);
		const struct kfd_node *d = topo_node(req->dst, map[i]);

		if (!gpu_ok(req, s, d))
			return false;
		c->ident += !(d->index == s->index && d->gpu_id == s->gpu_id);
		c->numa += topo_gpu_cpu_node(req->dst, d) != topo_gpu_cpu_node(req->src, s);
		for (size_t j = i + 1; j < n; j++) {
			const struct kfd_node *t = topo_node(req->src, src[j]);
			const struct kfd_node *e = topo_node(req->dst, map[j]);

			if (map[i] == map[j] || !pair_ok(req, s, t, d, e))
				return false;
			c->weight += pair_cost(s, t, d, e);
		}
	}
	return true;
}

struct brute {
	const struct match_request *req;
	const uint32_t *src, *dst;
	size_t n, m;
	uint32_t map[MAX_GPUS];
	bool used[MAX_GPUS];
	bool found;
	struct cost best;
};

static void brute_force(struct brute *b, size_t i)
{
	struct cost c;

	if (i == b->n) {
		if (evaluate(b->req, b->src, b->n, b->map, &c) &&
		    (!b->found || cost_cmp(&c, &b->best) < 0)) {
			b->best = c;
			b->found = true;
		}
		return;
	}
	for (size_t d = 0; d < b->m; d++) {
		if (b->used[d])
			continue;
		b->used[d] = true;
		b->map[i] = b->dst[d];
		brute_force(b, i + 1);
		b->used[d] = false;
	}
}

/* ---- the cases ------------------------------------------------------------------ */

static void check_case(struct rng *r, unsigned int k, unsigned int *n_found)
{
	uint32_t n_dst_gpus = 2 + rng_next(r, MAX_GPUS - 1);
	uint32_t n_src_gpus = 1 + rng_next(r, n_dst_gpus);
	/* a third of the cases restore onto the same box: identity counts */
	bool same_box = !rng_next(r, 3);
	struct kfd_topology *src = random_topology(r, same_box ? n_dst_gpus : n_src_gpus, 100);
	struct kfd_topology *dst = same_box ? src : random_topology(r, n_dst_gpus, 500);
	uint32_t src_nodes[MAX_GPUS], dst_nodes[MAX_GPUS], map[MAX_GPUS];
	struct match_request req = synth_request(src, dst);
	struct brute b = {.req = &req};
	struct match_result res;
	struct cost got;
	size_t n = 0;

	for (uint32_t i = 0; i < n_dst_gpus; i++)
		dst_nodes[i] = 2 + i;
	for (uint32_t i = 0; i < src->n_nodes - 2 && n < n_src_gpus; i++)
		if (!same_box || rng_next(r, 2) || src->n_nodes - 2 - i <= n_src_gpus - n)
			src_nodes[n++] = 2 + i;
	req.checks.numa = rng_next(r, 4) != 0;
	req.src_nodes = src_nodes;
	req.n_src_nodes = n;
	req.dst_nodes = dst_nodes;
	req.n_dst_nodes = n_dst_gpus;
	b.src = src_nodes;
	b.dst = dst_nodes;
	b.n = n;
	b.m = n_dst_gpus;
	brute_force(&b, 0);

	assert_int_equal(topo_match(&req, &res), 0);
	if (b.found != res.compatible)
		fail_msg("case %u: brute force %s a mapping, matcher says: %s", k,
			 b.found ? "finds" : "finds no",
			 res.compatible ? "compatible" : res.reason);
	if (res.compatible) {
		for (size_t i = 0; i < n; i++)
			map[i] = res.map[i].dst_node;
		if (!evaluate(&req, src_nodes, n, map, &got))
			fail_msg("case %u: matcher returned an invalid mapping", k);
		if (cost_cmp(&got, &b.best))
			fail_msg("case %u: cost (%llu, %llu, %llu), brute force (%llu, %llu, %llu)",
				 k, (unsigned long long)got.ident, (unsigned long long)got.weight,
				 (unsigned long long)got.numa, (unsigned long long)b.best.ident,
				 (unsigned long long)b.best.weight,
				 (unsigned long long)b.best.numa);
		(*n_found)++;
	}
	match_result_free(&res);
	if (dst != src)
		synth_free(dst);
	synth_free(src);
}

static void test_random_against_brute_force(void **state)
{
	struct rng r = {.state = 20240917};
	unsigned int found = 0;

	(void)state;
	for (unsigned int k = 0; k < N_CASES; k++)
		check_case(&r, k, &found);
	print_message("# %u random cases, %u with a mapping\n", N_CASES, found);
	/* both outcomes must be well represented, or the comparison says little */
	assert_true(found > N_CASES / 5);
	assert_true(found < N_CASES * 4 / 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_against_brute_force),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
