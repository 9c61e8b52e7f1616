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

#include "topology/match_int.h"

/* ---- entry points ---------------------------------------------------------- */

/* Consecutive node indexes as ranges: "2-5", "2-5, 9". */
static void msg_node_ranges(struct msg *out, const uint32_t *idx, size_t n)
{
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && idx[j] == idx[j - 1] + 1; j++)
			;
		mt_msg_add(out, "%s%u", i ? ", " : "", idx[i]);
		if (j - i > 1)
			mt_msg_add(out, "-%u", idx[j - 1]);
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
			if (topo->nodes[i].is_gpu && (int)mt_gpu_unusable(&topo->nodes[i]) == kind)
				idx[n++] = topo->nodes[i].index;
		if (!n)
			continue;
		mt_msg_add(out, "%s GPU node%s ", first ? "; not usable:" : ",", n == 1 ? "" : "s");
		msg_node_ranges(out, idx, n);
		mt_msg_add(out, " (%s)", mt_unusable_why[kind]);
		first = false;
	}
	free(idx);
}

static void explain_too_few(const struct matcher *mt, struct msg *out)
{
	mt_msg_add(out, "checkpoint has %zu GPU%s, only %zu destination GPU%s usable", mt->src.n,
		   mt->src.n == 1 ? "" : "s", mt->dst.n, mt->dst.n == 1 ? " is" : "s are");
	for (size_t d = 0; d < mt->dst.n; d++) {
		mt_msg_add(out, "%s", d ? ", " : ": ");
		mt_msg_gpu(out, &mt->dst.gpu[d]);
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

/* Runs the checks and the mt_search; 0 with res->compatible set or the reason written. */
static int solve(struct matcher *mt, struct match_result *res, struct msg *reason)
{
	long unmatched;

	if (mt->src.n > mt->dst.n) {
		explain_too_few(mt, reason);
		return 0;
	}
	if (!mt_build_domains(mt, reason))
		return 0;
	unmatched = mt_restrict_domains(mt, 0);
	if (unmatched >= 0) {
		mt_explain_hall(mt, (size_t)unmatched, reason);
		return 0;
	}
	mt->root_bound = mt_lower_bound(mt, 0, (struct cost){0});
	mt_build_places(mt);
	mt_build_groups(mt);
	mt_place_groups(mt, 0);
	res->search_steps = mt->steps;
	if (!mt->have_best) {
		mt_explain_structure(mt, reason);
		return 0;
	}
	return fill_result(mt, res);
}

static int prepare(struct matcher *mt, const struct match_request *req, struct msg *err)
{
	int ret;

	if (!req->src || !req->dst) {
		mt_msg_add(err, "no %s topology", req->src ? "destination" : "source");
		return -EINVAL;
	}
	mt->checks = &req->checks;
	ret = mt_collect_side(&mt->src, req->src, req->src_nodes, req->n_src_nodes, true, err);
	if (!ret)
		ret = mt_collect_side(&mt->dst, req->dst, req->dst_nodes, req->n_dst_nodes, false,
				      err);
	if (!ret)
		ret = mt_build_side_tables(&mt->src);
	if (!ret)
		ret = mt_build_side_tables(&mt->dst);
	if (!ret)
		ret = mt_alloc_matcher(mt);
	if (ret)
		return ret;
	mt_build_pair_tables(mt);
	mt_build_preference_tables(mt);
	return 0;
}

int topo_match(const struct match_request *req, struct match_result *res)
{
	struct matcher mt = {0};
	struct msg reason;
	int ret;

	memset(res, 0, sizeof(*res));
	mt_msg_init(&reason, res->reason, sizeof(res->reason));
	ret = prepare(&mt, req, &reason);
	if (ret)
		goto out;
	ret = solve(&mt, res, &reason);
out:
	if (ret == -ENOMEM && !reason.len)
		mt_msg_add(&reason, "out of memory");
	mt_free_matcher(&mt);
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
