// SPDX-License-Identifier: MIT
/*
 * JSON descriptions of KFD nodes, shared by every command that prints GPUs
 * as JSON (topology, inspect).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "tools/cli.h"

/* Every key the properties file had, with its value, in kernel order. */
struct json_object *node_properties_json(const struct kfd_node *n)
{
	struct json_object *props = json_object_new_object();

	for (int p = 0; props && p < KFD_PROP__COUNT; p++) {
		if (!kfd_prop_present(n, p))
			continue;
		if (json_put_u64(props, kfd_prop_name(p), kfd_prop_get(n, p))) {
			json_object_put(props);
			props = NULL;
		}
	}
	return props;
}

/* "0x..." for a 64-bit id (JSON readers often parse numbers as doubles), null for 0 */
int json_put_hex_id(struct json_object *obj, const char *key, uint64_t id)
{
	char hex[FMT_SHORT];

	if (!id)
		return json_put_null(obj, key);
	snprintf(hex, sizeof(hex), "0x%016" PRIx64, id);
	return json_put_str(obj, key, hex);
}

static int put_partition(struct json_object *jn, const struct kfd_topology *topo,
			 const struct kfd_node *n)
{
	struct json_object *part;
	size_t index, count;

	if (!topo_partition_of(topo, n, &index, &count))
		return json_put_null(jn, "partition");
	part = json_object_new_object();
	if (!part)
		return -ENOMEM;
	if (json_put_u64(part, "index", index) || json_put_u64(part, "count", count) ||
	    json_put_hex_id(part, "unique_id", n->props.unique_id)) {
		json_object_put(part);
		return -ENOMEM;
	}
	return json_put(jn, "partition", part);
}

int node_put_gpu_fields(struct json_object *jn, const struct kfd_topology *topo,
			const struct kfd_node *n)
{
	uint32_t minor = (uint32_t)n->props.drm_render_minor;
	int cpu_node = topo_gpu_cpu_node(topo, n);
	char gfx[FMT_SHORT], render[FMT_SHORT], pci[FMT_SHORT], address[FMT_SHORT];

	fmt_gfx_target(n, gfx, sizeof(gfx));
	fmt_render_node(minor, render, sizeof(render));
	fmt_pci_bus(n, pci, sizeof(pci));
	fmt_pci_address(n, address, sizeof(address));
	/* null rather than 0 or "-" for what the capture does not tell */
	if (json_put_opt_u64(jn, "gpu_id", n->gpu_id, n->gpu_id != 0) ||
	    json_put_untrusted_str(jn, "name", n->name) ||
	    json_put_u64(jn, "render_minor", minor) ||
	    json_put_opt_str(jn, "render_node", minor ? render : NULL) ||
	    json_put_u64(jn, "device_id", n->props.device_id) ||
	    json_put_opt_str(jn, "device_name", amdgpu_device_name((uint32_t)n->props.device_id)) ||
	    json_put_opt_str(jn, "gfx_target", gfx[0] != '-' ? gfx : NULL) ||
	    json_put_u64(jn, "vram_size", n->vram_size) ||
	    json_put_u64(jn, "vram_heap_type", n->vram_heap_type) ||
	    json_put_u64(jn, "compute_units", node_compute_units(n)) ||
	    json_put_str(jn, "pci_bus", pci) || json_put_str(jn, "pci_address", address) ||
	    json_put_hex_id(jn, "unique_id", n->props.unique_id) ||
	    json_put_hex_id(jn, "hive_id", n->props.hive_id) || put_partition(jn, topo, n) ||
	    json_put_opt_u64(jn, "cpu_node", (uint64_t)cpu_node, cpu_node >= 0) ||
	    json_put_bool(jn, "cpu_visible", topo_gpu_cpu_visible(topo, n)))
		return -ENOMEM;
	return 0;
}
