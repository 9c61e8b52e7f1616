/* SPDX-License-Identifier: MIT */
/*
 * Conversion between the topology model (topology.h) and the KfdTopologyEntry
 * image message (amdgpu_plugin.proto).
 *
 * What an image holds: the nodes it was asked for plus every CPU node of the
 * topology, each with its properties (present keys only, by name), name,
 * gpu_id, VRAM summary, caches count and all its io_links/p2p_links exactly as
 * read, including links to nodes the image leaves out. CPU nodes are few and
 * small; keeping all of them means that a node missing from an image is always
 * a GPU that was not recorded. mem_banks are not kept beyond vram_size and
 * vram_heap_type.
 *
 * What topo_from_image() builds: a dense node array of max_index + 1 entries.
 * Nodes missing from the image get accessible = false, is_gpu = true, gpu_id
 * 0 and nothing else, which is how topo_load() shows a GPU that the device
 * cgroup hides. So links to them are never taken for a GPU's CPU link, and a
 * matcher asked for "all GPU nodes" refuses them instead of matching blind:
 * pass the recorded GPUs (the accessible GPU nodes) explicitly.
 */
#ifndef AMDGPU_CRIU_TOPOLOGY_IMAGE_H
#define AMDGPU_CRIU_TOPOLOGY_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "amdgpu_plugin.pb-c.h"
#include "topology/topology.h"

/* Bounds on what topo_from_image() accepts (the same as topo_load()'s). */
#define TOPO_IMAGE_MAX_NODES 4096 /* node indexes and link ends are below this */
#define TOPO_IMAGE_MAX_LINKS 4096 /* io_links, and p2p_links, per node */
#define TOPO_IMAGE_MAX_PROPS 1024 /* properties per node, unknown keys included */
/*
 * In one image's topology, all nodes together (images only: what the image
 * must hold is its GPUs and the CPU nodes, a real topology has a few dozen
 * nodes of ~50 properties and links to each other node: 65 nodes, 4034
 * io_links for an MI300X in CPX mode). With the per-node bounds alone,
 * 4096 nodes of 4096 links were 168 MB of image and 2.3 GB to read.
 */
#define TOPO_IMAGE_MAX_TOTAL_LINKS (1 << 16) /* io_links, and p2p_links */
#define TOPO_IMAGE_MAX_TOTAL_PROPS (1 << 16)

/*
 * Image of the nodes `nodes[0..n-1]` of `t` and of all its CPU nodes, in index
 * order. nodes == NULL: every accessible node. Returns 0 and a message to be
 * released with topo_image_free(); -EINVAL if a listed index does not exist,
 * is listed twice or names an inaccessible node (nothing of it is known);
 * -ENOMEM.
 */
int topo_to_image(const struct kfd_topology *t, const uint32_t *nodes, size_t n,
		  KfdTopologyEntry **out);

/* Frees a message made by topo_to_image() (not an unpacked one: use
 * kfd_topology_entry__free_unpacked() for those). NULL is fine. */
void topo_image_free(KfdTopologyEntry *e);

/*
 * Topology of an image, which may come from anywhere: every count, index,
 * string and value is checked against the bounds above and the model's field
 * sizes before anything is allocated for it. Unknown property keys are
 * ignored (newer writers); a known key given twice is an error. Returns 0 and
 * fills *out (release with topo_free()), or a negative errno (-EINVAL for bad
 * content, -ENOMEM) with a one-line message in errbuf; *out is then empty.
 */
int topo_from_image(const KfdTopologyEntry *e, struct kfd_topology *out, char *errbuf,
		    size_t errlen);

#endif
