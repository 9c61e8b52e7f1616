// SPDX-License-Identifier: MIT
/*
 * Per-GPU property compatibility: may a checkpointed GPU run on a local GPU?
 *
 * The rules are the reference plugin's (docs/kfd-facts.md 9.8) with two
 * differences:
 *   - io_links_count / p2p_links_count / mem_banks_count are not compared:
 *     the matcher compares links structurally, so a GPU restored into a
 *     smaller or larger box is still usable;
 *   - a key is compared only when both nodes have it. Key sets differ by
 *     kernel (a 2018 kernel has no gfx_target_version, num_gws, num_sdma_*,
 *     num_xcc), and a checkpoint taken on an old kernel must still restore on
 *     a new one. VRAM size and heap type count as present when the node has a
 *     frame-buffer mem_bank (captures without mem_banks have none).
 * Checks run in a fixed order (compute shape first) so the first failure,
 * which is what a reason message names, is stable.
 */
#include <stddef.h>
#include <stdio.h>

#include "topology/match.h"

enum compat_rule {
	RULE_EQUAL,  /* destination value must equal the source value */
	RULE_DST_GE, /* destination value must be at least the source value */
};

/* A check that is always on, as opposed to one struct match_checks can switch off. */
#define CHECK_ALWAYS ((size_t)-1)

struct prop_rule {
	enum kfd_prop prop;
	enum compat_rule rule;
	size_t check; /* offsetof(struct match_checks, <switch>), or CHECK_ALWAYS */
};

#define EQ(p)                                                                                      \
	{                                                                                          \
		KFD_PROP_##p, RULE_EQUAL, CHECK_ALWAYS                                             \
	}
#define EQ_IF(p, c)                                                                                \
	{                                                                                          \
		KFD_PROP_##p, RULE_EQUAL, offsetof(struct match_checks, c)                         \
	}
#define GE_IF(p, c)                                                                                \
	{                                                                                          \
		KFD_PROP_##p, RULE_DST_GE, offsetof(struct match_checks, c)                        \
	}

/* Compute shape, identity, queues: what the saved queues and code depend on. */
static const struct prop_rule shape_rules[] = {
	EQ(simd_count),
	EQ(array_count),
	EQ(simd_arrays_per_engine),
	EQ(cu_per_simd_array),
	EQ(simd_per_cu),
	EQ(max_waves_per_simd),
	EQ(lds_size_in_kb),
	EQ(wave_front_size),
	EQ(max_slots_scratch_cu),
	EQ(gfx_target_version),
	EQ(num_xcc),
	EQ(vendor_id),
	EQ(device_id),
	EQ(num_sdma_engines),
	EQ(num_sdma_xgmi_engines),
	EQ(num_sdma_queues_per_engine),
	EQ(num_cp_queues),
};

/* Resources and firmware the destination must have at least as much of. */
static const struct prop_rule resource_rules[] = {
	GE_IF(caches_count, caches_count), GE_IF(num_gws, num_gws),
	GE_IF(fw_version, fw_version),	   GE_IF(sdma_fw_version, sdma_fw_version),
	EQ_IF(capability, capability),
};

static const char *rule_text(enum compat_rule rule)
{
	return rule == RULE_EQUAL ? "must be equal" : "destination must be >=";
}

static bool rule_holds(enum compat_rule rule, uint64_t src, uint64_t dst)
{
	return rule == RULE_EQUAL ? src == dst : dst >= src;
}

static bool rule_enabled(const struct match_checks *checks, const struct prop_rule *r)
{
	if (r->check == CHECK_ALWAYS)
		return true;
	return *(const bool *)((const char *)checks + r->check);
}

/*
 * Counts the failed rules; the first failure (if *failed was 0 on entry)
 * is described in why.
 */
static void check_value(const char *name, enum compat_rule rule, uint64_t src, uint64_t dst,
			int *failed, char *why, size_t whylen)
{
	if (rule_holds(rule, src, dst))
		return;
	if (why && whylen && !*failed)
		snprintf(why, whylen, "%s: source %llu, destination %llu (%s)", name,
			 (unsigned long long)src, (unsigned long long)dst, rule_text(rule));
	(*failed)++;
}

static void check_props(const struct match_checks *checks, const struct prop_rule *rules,
			size_t n_rules, const struct kfd_node *s, const struct kfd_node *d,
			int *failed, char *why, size_t whylen)
{
	for (size_t i = 0; i < n_rules; i++) {
		const struct prop_rule *r = &rules[i];

		if (!rule_enabled(checks, r))
			continue;
		if (!kfd_prop_present(s, r->prop) || !kfd_prop_present(d, r->prop))
			continue;
		check_value(kfd_prop_name(r->prop), r->rule, kfd_prop_get(s, r->prop),
			    kfd_prop_get(d, r->prop), failed, why, whylen);
	}
}

static const char *heap_name(uint32_t heap_type)
{
	switch (heap_type) {
	case KFD_HEAP_FB_PUBLIC:
		return "public";
	case KFD_HEAP_FB_PRIVATE:
		return "private";
	default:
		return "none";
	}
}

/* Heap type says whether the CPU can map all of VRAM (large BAR). */
static void check_vram(const struct match_checks *checks, const struct kfd_node *s,
		       const struct kfd_node *d, int *failed, char *why, size_t whylen)
{
	if (!s->vram_heap_type || !d->vram_heap_type)
		return;
	if (s->vram_heap_type != d->vram_heap_type) {
		if (why && whylen && !*failed)
			snprintf(why, whylen,
				 "vram_heap_type: source %u (%s), destination %u (%s) (must be "
				 "equal)",
				 s->vram_heap_type, heap_name(s->vram_heap_type), d->vram_heap_type,
				 heap_name(d->vram_heap_type));
		(*failed)++;
	}
	if (checks->vram_size)
		check_value("vram_size", RULE_DST_GE, s->vram_size, d->vram_size, failed, why,
			    whylen);
}

int match_gpu_compat(const struct match_checks *checks, const struct kfd_node *s,
		     const struct kfd_node *d, char *why, size_t whylen)
{
	int failed = 0;

	if (why && whylen)
		why[0] = '\0';
	check_props(checks, shape_rules, sizeof(shape_rules) / sizeof(shape_rules[0]), s, d,
		    &failed, why, whylen);
	check_vram(checks, s, d, &failed, why, whylen);
	check_props(checks, resource_rules, sizeof(resource_rules) / sizeof(resource_rules[0]), s,
		    d, &failed, why, whylen);
	return failed;
}
