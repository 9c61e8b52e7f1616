/* SPDX-License-Identifier: MIT */
/*
 * KFD topology model and reader.
 *
 * Reads a tree laid out like /sys/class/kfd/kfd/topology (or a capture of one)
 * into plain structs. The reader follows what real captures show
 * (docs: docs/kfd-topology-facts.md):
 *   - node directories are numbered 0..N-1 but need not be listed in order;
 *   - key sets differ between kernels: known keys are stored with a "present"
 *     bit, unknown keys are ignored, optional files (gpu_id, name, mem_banks,
 *     caches, io_links, p2p_links, generation_id) may be missing;
 *   - a node whose files cannot be read because of EPERM/EACCES (a container's
 *     device cgroup hides that GPU) is kept and marked !accessible;
 *   - a malformed value is an error naming the file and the line.
 * VRAM size comes from mem_banks (local_mem_size is 0 on modern dGPUs).
 *
 * Contract: topo_load() returns 0 and fills *out, or a negative errno with a
 * one-line message in errbuf. The topology owns all its memory; release it
 * with topo_free(). Nothing here keeps global state.
 */
#ifndef AMDGPU_CRIU_TOPOLOGY_H
#define AMDGPU_CRIU_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KFD_SYSFS_TOPOLOGY "/sys/class/kfd/kfd/topology"

/* nodes/N/properties keys we keep (kernel 6.12 order, plus newer/older ones). */
#define KFD_NODE_PROPS(X)                                                                          \
	X(cpu_cores_count)                                                                         \
	X(simd_count)                                                                              \
	X(mem_banks_count)                                                                         \
	X(caches_count)                                                                            \
	X(io_links_count)                                                                          \
	X(p2p_links_count)                                                                         \
	X(cpu_core_id_base)                                                                        \
	X(simd_id_base)                                                                            \
	X(max_waves_per_simd)                                                                      \
	X(lds_size_in_kb)                                                                          \
	X(gds_size_in_kb)                                                                          \
	X(num_gws)                                                                                 \
	X(wave_front_size)                                                                         \
	X(array_count)                                                                             \
	X(simd_arrays_per_engine)                                                                  \
	X(cu_per_simd_array)                                                                       \
	X(simd_per_cu)                                                                             \
	X(max_slots_scratch_cu)                                                                    \
	X(gfx_target_version)                                                                      \
	X(vendor_id)                                                                               \
	X(device_id)                                                                               \
	X(location_id)                                                                             \
	X(domain)                                                                                  \
	X(drm_render_minor)                                                                        \
	X(hive_id)                                                                                 \
	X(num_sdma_engines)                                                                        \
	X(num_sdma_xgmi_engines)                                                                   \
	X(num_sdma_queues_per_engine)                                                              \
	X(num_cp_queues)                                                                           \
	X(cwsr_size)                                                                               \
	X(ctl_stack_size)                                                                          \
	X(max_engine_clk_fcompute)                                                                 \
	X(local_mem_size)                                                                          \
	X(fw_version)                                                                              \
	X(capability)                                                                              \
	X(capability2)                                                                             \
	X(debug_prop)                                                                              \
	X(sdma_fw_version)                                                                         \
	X(unique_id)                                                                               \
	X(num_xcc)                                                                                 \
	X(max_engine_clk_ccompute)

enum kfd_prop {
#define KFD_PROP_ENUM(name) KFD_PROP_##name,
	KFD_NODE_PROPS(KFD_PROP_ENUM)
#undef KFD_PROP_ENUM
		KFD_PROP__COUNT
};

/* Values of every known key; bit (1 << KFD_PROP_x) of `present` says the file had it. */
struct kfd_node_props {
#define KFD_PROP_FIELD(name) uint64_t name;
	KFD_NODE_PROPS(KFD_PROP_FIELD)
#undef KFD_PROP_FIELD
	uint64_t present;
};

/* io_links/p2p_links "type" values (include/uapi/linux/kfd_sysfs.h) */
enum kfd_iolink_type {
	KFD_IOLINK_UNDEFINED = 0,
	KFD_IOLINK_HYPERTRANSPORT = 1,
	KFD_IOLINK_PCIEXPRESS = 2,
	KFD_IOLINK_QPI_1_1 = 5,
	KFD_IOLINK_XGMI = 11,
};

/* mem_banks heap_type values */
enum kfd_heap_type {
	KFD_HEAP_SYSTEM = 0,
	KFD_HEAP_FB_PUBLIC = 1,
	KFD_HEAP_FB_PRIVATE = 2,
};

struct kfd_link {
	uint32_t type;	    /* enum kfd_iolink_type */
	uint32_t node_from; /* node index */
	uint32_t node_to;   /* node index */
	uint32_t weight;
	uint32_t flags;
	uint64_t min_bandwidth; /* MB/s */
	uint64_t max_bandwidth; /* MB/s */
};

struct kfd_mem_bank {
	uint32_t heap_type; /* enum kfd_heap_type */
	uint32_t flags;
	uint32_t width;
	uint32_t mem_clk_max;
	uint64_t size_in_bytes;
};

struct kfd_node {
	uint32_t index;	 /* N of nodes/N: the proximity domain links refer to */
	bool accessible; /* false: reading it failed with EPERM/EACCES */
	bool is_gpu;	 /* has compute units (simd_count > 0) */
	uint32_t gpu_id; /* 0 for CPU nodes, and when the gpu_id file is absent */
	char name[64];	 /* ASIC name, "ip discovery", or "" */
	struct kfd_node_props props;

	struct kfd_mem_bank *mem_banks;
	size_t n_mem_banks;
	size_t n_caches; /* number of caches/ entries found (0 if not captured) */
	struct kfd_link *io_links;
	size_t n_io_links;
	struct kfd_link *p2p_links;
	size_t n_p2p_links;

	/* derived from mem_banks: total size and heap type of the FB banks */
	uint64_t vram_size;
	uint32_t vram_heap_type; /* KFD_HEAP_FB_PUBLIC/PRIVATE, or 0 if no FB bank */
};

struct kfd_topology {
	struct kfd_node *nodes; /* sorted by index; index == position */
	size_t n_nodes;
	uint32_t generation_id; /* 0 if the file is absent */
	bool has_generation_id;
};

/*
 * Read the topology rooted at `root` (the directory that holds nodes/;
 * NULL means KFD_SYSFS_TOPOLOGY). Node directories must be numbered
 * 0..N-1 without gaps (KFD numbers them so); anything else is an error.
 */
int topo_load(const char *root, struct kfd_topology *out, char *errbuf, size_t errlen);
void topo_free(struct kfd_topology *topo);

/* Node by index, or NULL. */
const struct kfd_node *topo_node(const struct kfd_topology *topo, uint32_t index);
/* GPU node by gpu_id, or NULL. */
const struct kfd_node *topo_gpu_by_id(const struct kfd_topology *topo, uint32_t gpu_id);

/* 1 if the key was present in the node's properties file. */
static inline bool kfd_prop_present(const struct kfd_node *n, enum kfd_prop p)
{
	return n->props.present & (1ULL << p);
}

/*
 * drm_render_minor: 0 for a node without a render node (CPU nodes), else a
 * DRM render minor: 128..191, then from 192 up (kernels with DRM's extended
 * minor range, around 6.8) to the largest minor a device number holds
 * (MINORBITS 20). Anything else did not come from a kernel.
 */
#define KFD_RENDER_MINOR_FIRST 128u
#define KFD_RENDER_MINOR_LAST  ((1u << 20) - 1)
static inline bool kfd_render_minor_valid(uint64_t minor)
{
	return !minor || (minor >= KFD_RENDER_MINOR_FIRST && minor <= KFD_RENDER_MINOR_LAST);
}

/* Key name of a property ("simd_count"), for messages. */
const char *kfd_prop_name(enum kfd_prop p);

/* Value of a property by enum (0 if absent). */
uint64_t kfd_prop_get(const struct kfd_node *n, enum kfd_prop p);

/*
 * The CPU node a GPU hangs off: node_to of its direct link to a non-GPU node
 * with the lowest weight (first such link on ties). -1 if there is none.
 */
int topo_gpu_cpu_node(const struct kfd_topology *topo, const struct kfd_node *gpu);

/* The direct io_link from node `from` to node `to`, or NULL. */
const struct kfd_link *topo_io_link(const struct kfd_node *from, uint32_t to);
/* The indirect p2p_link from node `from` to node `to`, or NULL. */
const struct kfd_link *topo_p2p_link(const struct kfd_node *from, uint32_t to);

/* True if some CPU node has a direct io_link to this GPU (large BAR / CPU-attached). */
bool topo_gpu_cpu_visible(const struct kfd_topology *topo, const struct kfd_node *gpu);

#endif
