/* SPDX-License-Identifier: MIT */
/*
 * Matching checkpointed GPUs onto the GPUs of a restore node.
 *
 * Input: the source GPUs (the GPUs KFD gave the checkpointed process, with
 * their properties and the links among them, as a struct kfd_topology) and
 * the destination topology, optionally restricted to the GPUs the restored
 * process may use. Output: an injective map source GPU -> destination GPU, or
 * the reason why none exists.
 *
 * Hard rules (a mapping violating one is never returned):
 *   - per GPU: the reference plugin's property rules (docs/kfd-facts.md 9.8):
 *     equal compute shape, device id, SDMA/CP queue counts and VRAM heap type;
 *     destination VRAM size, caches count, GWS, firmware versions >= source;
 *     capability equal. Link counts are NOT compared. The relaxable checks
 *     follow upstream CRIU's environment variables (struct match_checks).
 *     A key is compared only when both nodes have it (old kernels lack
 *     gfx_target_version, num_gws, num_sdma_*, num_xcc ...); VRAM size and
 *     heap type only when both nodes have a frame-buffer mem_bank.
 *   - structure: GPUs linked by xGMI land on GPUs linked by xGMI; no link (to
 *     a peer GPU or to the GPU's CPU) is replaced by a weaker type; a GPU the
 *     CPU reached directly (CPU->GPU io_link, large BAR) lands on one the CPU
 *     reaches directly; with the NUMA check, GPUs that shared a CPU node keep
 *     sharing one.
 * Preference among valid mappings, lexicographic:
 *   1. identity: as many GPUs as possible stay on the node with the same
 *      index and the same gpu_id (both must match);
 *   2. link weights between every pair of source GPUs preserved (partitions of
 *      one physical GPU stay on one physical GPU, a hive stays in a hive);
 *   3. CPU/NUMA affinity (same CPU node index).
 * The search is complete (it finds a mapping whenever one exists) and
 * deterministic (same input, same answer). The preference is optimal unless
 * a fixed budget of search steps after the first solution runs out (design
 * and cost details: match.c).
 */
#ifndef AMDGPU_CRIU_MATCH_H
#define AMDGPU_CRIU_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "topology/topology.h"

/* Relaxable checks; all on by default. */
struct match_checks {
	bool capability;      /* KFD_CAPABILITY_CHECK */
	bool vram_size;	      /* KFD_VRAM_SIZE_CHECK */
	bool num_gws;	      /* KFD_NUM_GWS_CHECK */
	bool caches_count;    /* KFD_CACHES_COUNT_CHECK */
	bool fw_version;      /* KFD_FW_VER_CHECK */
	bool sdma_fw_version; /* KFD_SDMA_FW_VER_CHECK */
	bool numa;	      /* KFD_NUMA_CHECK */
};

void match_checks_default(struct match_checks *checks);

struct match_pair {
	uint32_t src_node;
	uint32_t src_gpu_id;
	uint32_t src_render_minor;
	uint32_t dst_node;
	uint32_t dst_gpu_id;
	uint32_t dst_render_minor;
};

struct match_request {
	const struct kfd_topology *src;
	const uint32_t *src_nodes; /* node indexes of the source GPUs; NULL: all GPU nodes */
	size_t n_src_nodes;
	const struct kfd_topology *dst;
	const uint32_t *dst_nodes; /* allowed destination GPUs; NULL: all accessible GPU nodes */
	size_t n_dst_nodes;
	struct match_checks checks;
};

struct match_result {
	bool compatible;
	struct match_pair *map; /* n_map entries, in source order; NULL if !compatible */
	size_t n_map;
	/*
	 * Why not compatible (one line, cut with "..." if longer), or "". Names
	 * the source GPUs (node and gpu_id) and the failed rule with both values:
	 * too few destinations (without dst_nodes also the GPU nodes left out and
	 * why, in the words of the error for a listed one), no compatible
	 * destination for a source (with the best candidate and its first
	 * failed check), sources competing for too few destinations, a link or
	 * shared CPU node no destination pair keeps, a group (shared CPU node,
	 * xGMI) no destination place can hold.
	 */
	char reason[1024];
	uint64_t search_steps; /* GPU assignments tried, for diagnostics */
};

/*
 * Returns 0 when a decision was reached (res->compatible says which), or a
 * negative errno with the message in res->reason: -ENOENT for a listed node
 * that does not exist, -EACCES for one that cannot be read, -EINVAL for one
 * that is not a GPU or has no gpu_id, a node listed twice, two GPUs with one
 * gpu_id or a missing topology, -ENOMEM. Without src_nodes every GPU node of
 * the source is a source and must be usable; without dst_nodes unreadable
 * GPUs and GPUs without gpu_id are left out. map[] is in source order (the
 * order of src_nodes). Call match_result_free() in both cases.
 */
int topo_match(const struct match_request *req, struct match_result *res);
void match_result_free(struct match_result *res);

/*
 * Per-GPU property compatibility of src GPU node `s` with dst GPU node `d`.
 * Returns the number of failed checks (0 = compatible). When why != NULL and
 * a check failed, writes the first failure as "<property>: source <v>,
 * destination <v> (<rule>)".
 */
int match_gpu_compat(const struct match_checks *checks, const struct kfd_node *s,
		     const struct kfd_node *d, char *why, size_t whylen);

#endif
