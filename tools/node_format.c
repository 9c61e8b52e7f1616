// SPDX-License-Identifier: MIT
/*
 * Human-readable descriptions of KFD nodes, shared by every command that
 * prints GPUs. Each formatter writes into the caller's buffer and returns it,
 * so calls can be used directly as printf or table arguments.
 */
#include <inttypes.h>
#include <stdio.h>

#include "tools/cli.h"

struct device_name {
	uint16_t device_id;
	const char *name;
};

/*
 * PCI device ids (vendor 0x1002) of the GPUs in our fixtures and their close
 * relatives, from the kernel's amdgpu_drv.c pciidlist and pci.ids. A missing
 * entry only costs the name: the id is always printed.
 */
static const struct device_name device_names[] = {
	{0x6860, "MI25"},   {0x687f, "Vega10"},		{0x66af, "Radeon VII"},
	{0x731f, "Navi10"}, {0x738c, "MI100"},		{0x73bf, "Navi21"},
	{0x73df, "Navi22"}, {0x73ef, "Navi23"},		{0x740c, "MI250X/MI250"},
	{0x740f, "MI210"},  {0x744c, "RX 7900 XT/XTX"}, {0x7489, "Navi33"},
	{0x74a0, "MI300A"}, {0x74a1, "MI300X"},		{0x74a2, "MI308X"},
	{0x7550, "Navi48"}, {0x75a0, "MI350X"},
};

const char *amdgpu_device_name(uint32_t device_id)
{
	for (size_t i = 0; i < sizeof(device_names) / sizeof(device_names[0]); i++)
		if (device_names[i].device_id == device_id)
			return device_names[i].name;
	return NULL;
}

char *fmt_device(const struct kfd_node *n, char *buf, size_t len)
{
	uint32_t id = (uint32_t)n->props.device_id;
	const char *name = amdgpu_device_name(id);

	if (name)
		snprintf(buf, len, "0x%04x %s", id, name);
	else
		snprintf(buf, len, "0x%04x", id);
	return buf;
}

/* gfx_target_version is major*10000 + minor*100 + stepping; the name prints minor and stepping in
 * hex */
char *fmt_gfx_target(const struct kfd_node *n, char *buf, size_t len)
{
	uint64_t v = n->props.gfx_target_version;

	if (!kfd_prop_present(n, KFD_PROP_gfx_target_version) || !v)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "gfx%" PRIu64 "%" PRIx64 "%" PRIx64, v / 10000, (v / 100) % 100,
			 v % 100);
	return buf;
}

/* Render minors start at 128; 0 means the capture has none (zeroed or absent). */
char *fmt_render_node(uint32_t minor, char *buf, size_t len)
{
	if (minor)
		snprintf(buf, len, "renderD%u", minor);
	else
		snprintf(buf, len, "-");
	return buf;
}

char *fmt_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	size_t unit = 0;
	uint64_t scale = 1;

	if (!bytes) {
		snprintf(buf, len, "-");
		return buf;
	}
	while (unit + 1 < sizeof(units) / sizeof(units[0]) && bytes >= scale * 1024) {
		scale *= 1024;
		unit++;
	}
	/* one decimal always: VRAM is rarely a round number (48 GiB minus reserved pages) */
	if (unit == 0)
		snprintf(buf, len, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, len, "%.1f %s", (double)bytes / (double)scale, units[unit]);
	return buf;
}

/* location_id is the PCI BDF (bus << 8 | devfn); partitions add their index to devfn */
char *fmt_pci_bus(const struct kfd_node *n, char *buf, size_t len)
{
	snprintf(buf, len, "%04x:%02x", (unsigned int)n->props.domain,
		 (unsigned int)(n->props.location_id >> 8) & 0xff);
	return buf;
}

char *fmt_pci_address(const struct kfd_node *n, char *buf, size_t len)
{
	unsigned int loc = (unsigned int)n->props.location_id;

	snprintf(buf, len, "%04x:%02x:%02x.%x", (unsigned int)n->props.domain, (loc >> 8) & 0xff,
		 (loc >> 3) & 0x1f, loc & 7);
	return buf;
}

/* Leading hex digits, like a short git hash: enough to tell hives apart in one box. */
char *fmt_short_id(uint64_t id, char *buf, size_t len)
{
	char hex[17];

	snprintf(hex, sizeof(hex), "%" PRIx64, id);
	snprintf(buf, len, "%.8s", id ? hex : "-");
	return buf;
}

uint32_t node_compute_units(const struct kfd_node *n)
{
	if (!n->props.simd_per_cu)
		return 0;
	return (uint32_t)(n->props.simd_count / n->props.simd_per_cu);
}

bool topo_partition_of(const struct kfd_topology *topo, const struct kfd_node *n, size_t *index,
		       size_t *count)
{
	uint64_t uid = n->props.unique_id;

	if (!kfd_prop_present(n, KFD_PROP_unique_id) || !uid)
		return false;
	*index = 0;
	*count = 0;
	for (size_t i = 0; i < topo->n_nodes; i++) {
		const struct kfd_node *peer = &topo->nodes[i];

		if (!peer->accessible || !peer->is_gpu || peer->props.unique_id != uid)
			continue;
		(*count)++;
		if (peer->index <= n->index)
			(*index)++;
	}
	return true;
}
