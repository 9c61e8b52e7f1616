// SPDX-License-Identifier: MIT
/*
 * amdgpu-criu topology [--sysfs DIR] [--json]
 *
 * The KFD topology of this host (or of a capture) as a table, one row per
 * node, or as one JSON document with everything the model holds.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "tools/cli.h"

struct topology_opts {
	const char *root; /* NULL: the local sysfs */
	bool json;
};

void cmd_topology_usage(FILE *out)
{
	fprintf(out,
		"usage: " CLI_NAME " topology [--sysfs DIR] [--json]\n\n"
		"Show the KFD topology: one row per node with its GPU id, render node, device,\n"
		"gfx target, VRAM, compute units, PCI address, xGMI hive and partition.\n\n"
		"options:\n"
		"  -s, --sysfs DIR  read the topology under DIR (a directory holding nodes/)\n"
		"                   instead of " KFD_SYSFS_TOPOLOGY "\n"
		"  -j, --json       print one JSON object with every property and link\n"
		"  -h, --help       show this help\n");
}

/* Returns -1 to go on, or the exit status to end with. */
static int parse_topology_opts(int argc, char *argv[], struct topology_opts *opts)
{
	static const struct option longopts[] = {
		{"sysfs", required_argument, NULL, 's'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:jh", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			opts->root = optarg;
			break;
		case 'j':
			opts->json = true;
			break;
		case 'h':
			cmd_topology_usage(stdout);
			return CLI_EXIT_OK;
		default:
			return cli_bad_option("topology", c, argv);
		}
	}
	if (optind < argc)
		return cli_extra_args("topology", argc, argv);
	return -1;
}

/* ---- table ------------------------------------------------------------------- */

enum topo_col {
	COL_NODE,
	COL_GPU_ID,
	COL_RENDER,
	COL_DEVICE,
	COL_GFX,
	COL_VRAM,
	COL_COMPUTE,
	COL_PCI,
	COL_HIVE,
	COL_PART,
	COL__COUNT,
};

static const struct table_column topo_columns[COL__COUNT] = {
	[COL_NODE] = {"NODE", true},	   [COL_GPU_ID] = {"GPU_ID", true},
	[COL_RENDER] = {"RENDER", false},  [COL_DEVICE] = {"DEVICE", false},
	[COL_GFX] = {"GFX", false},	   [COL_VRAM] = {"VRAM", true},
	[COL_COMPUTE] = {"COMPUTE", true}, [COL_PCI] = {"PCI", false},
	[COL_HIVE] = {"HIVE", false},	   [COL_PART] = {"PART", false},
};

/* Text of one row; cells point into it. */
struct topo_row {
	char node[FMT_SHORT], gpu_id[FMT_SHORT], render[FMT_SHORT], device[FMT_LONG],
		gfx[FMT_SHORT], vram[FMT_SHORT], compute[FMT_SHORT], pci[FMT_SHORT],
		hive[FMT_SHORT], part[FMT_SHORT];
	const char *cells[COL__COUNT];
};

static void fill_gpu_row(const struct kfd_topology *topo, const struct kfd_node *n,
			 struct topo_row *row)
{
	const char **cells = row->cells;
	size_t index, count;

	if (n->gpu_id)
		snprintf(row->gpu_id, sizeof(row->gpu_id), "%u", n->gpu_id);
	else
		snprintf(row->gpu_id, sizeof(row->gpu_id), "-");
	snprintf(row->compute, sizeof(row->compute), "%u CUs", node_compute_units(n));
	if (topo_partition_of(topo, n, &index, &count))
		snprintf(row->part, sizeof(row->part), "%zu/%zu", index, count);
	else
		snprintf(row->part, sizeof(row->part), "-");

	cells[COL_GPU_ID] = row->gpu_id;
	cells[COL_RENDER] = fmt_render_node((uint32_t)n->props.drm_render_minor, row->render,
					    sizeof(row->render));
	cells[COL_DEVICE] = fmt_device(n, row->device, sizeof(row->device));
	cells[COL_GFX] = fmt_gfx_target(n, row->gfx, sizeof(row->gfx));
	cells[COL_VRAM] = fmt_bytes(n->vram_size, row->vram, sizeof(row->vram));
	cells[COL_COMPUTE] = row->compute;
	cells[COL_PCI] = fmt_pci_address(n, row->pci, sizeof(row->pci));
	cells[COL_HIVE] = fmt_short_id(n->props.hive_id, row->hive, sizeof(row->hive));
	cells[COL_PART] = row->part;
}

static void fill_row(const struct kfd_topology *topo, const struct kfd_node *n,
		     struct topo_row *row)
{
	*row = (struct topo_row){0};
	snprintf(row->node, sizeof(row->node), "%u", n->index);
	row->cells[COL_NODE] = row->node;
	if (!n->accessible) {
		/* a container's device cgroup hides this GPU: KFD shows none of its files */
		row->cells[COL_DEVICE] = "(not accessible)";
	} else if (!n->is_gpu) {
		snprintf(row->compute, sizeof(row->compute), "%" PRIu64 " cores",
			 n->props.cpu_cores_count);
		row->cells[COL_DEVICE] = "CPU";
		row->cells[COL_COMPUTE] = row->compute;
	} else {
		fill_gpu_row(topo, n, row);
	}
}

static int print_topology_table(const struct kfd_topology *topo)
{
	struct table table;
	struct topo_row row;
	int ret = 0;

	table_init(&table, topo_columns, COL__COUNT);
	for (size_t i = 0; i < topo->n_nodes && !ret; i++) {
		fill_row(topo, &topo->nodes[i], &row);
		ret = table_add_row(&table, row.cells);
	}
	if (!ret)
		table_print(&table, stdout);
	else
		cli_err("topology: out of memory");
	table_free(&table);
	return ret;
}

/* ---- JSON -------------------------------------------------------------------- */

static const char *link_type_name(uint32_t type)
{
	switch (type) {
	case KFD_IOLINK_HYPERTRANSPORT:
		return "hypertransport";
	case KFD_IOLINK_PCIEXPRESS:
		return "pcie";
	case KFD_IOLINK_QPI_1_1:
		return "qpi";
	case KFD_IOLINK_XGMI:
		return "xgmi";
	default:
		return "other";
	}
}

static struct json_object *link_json(const struct kfd_link *l)
{
	struct json_object *jl = json_object_new_object();

	if (!jl)
		return NULL;
	if (json_put_u64(jl, "type", l->type) ||
	    json_put_str(jl, "type_name", link_type_name(l->type)) ||
	    json_put_u64(jl, "node_from", l->node_from) ||
	    json_put_u64(jl, "node_to", l->node_to) || json_put_u64(jl, "weight", l->weight) ||
	    json_put_u64(jl, "flags", l->flags) ||
	    json_put_u64(jl, "min_bandwidth", l->min_bandwidth) ||
	    json_put_u64(jl, "max_bandwidth", l->max_bandwidth)) {
		json_object_put(jl);
		return NULL;
	}
	return jl;
}

static struct json_object *links_json(const struct kfd_link *links, size_t n)
{
	struct json_object *arr = json_object_new_array();

	for (size_t i = 0; arr && i < n; i++) {
		if (json_append(arr, link_json(&links[i]))) {
			json_object_put(arr);
			arr = NULL;
		}
	}
	return arr;
}

static struct json_object *mem_bank_json(const struct kfd_mem_bank *b)
{
	struct json_object *jb = json_object_new_object();

	if (!jb)
		return NULL;
	if (json_put_u64(jb, "heap_type", b->heap_type) || json_put_u64(jb, "flags", b->flags) ||
	    json_put_u64(jb, "width", b->width) ||
	    json_put_u64(jb, "mem_clk_max", b->mem_clk_max) ||
	    json_put_u64(jb, "size_in_bytes", b->size_in_bytes)) {
		json_object_put(jb);
		return NULL;
	}
	return jb;
}

static struct json_object *mem_banks_json(const struct kfd_node *n)
{
	struct json_object *arr = json_object_new_array();

	for (size_t i = 0; arr && i < n->n_mem_banks; i++) {
		if (json_append(arr, mem_bank_json(&n->mem_banks[i]))) {
			json_object_put(arr);
			arr = NULL;
		}
	}
	return arr;
}

static int put_model_fields(struct json_object *jn, const struct kfd_node *n)
{
	if (json_put_u64(jn, "caches", n->n_caches) ||
	    json_put(jn, "properties", node_properties_json(n)) ||
	    json_put(jn, "mem_banks", mem_banks_json(n)) ||
	    json_put(jn, "io_links", links_json(n->io_links, n->n_io_links)) ||
	    json_put(jn, "p2p_links", links_json(n->p2p_links, n->n_p2p_links)))
		return -ENOMEM;
	return 0;
}

static struct json_object *node_json(const struct kfd_topology *topo, const struct kfd_node *n)
{
	struct json_object *jn = json_object_new_object();
	const char *type = n->is_gpu ? "gpu" : "cpu";
	int ret;

	if (!jn)
		return NULL;
	ret = json_put_u64(jn, "node", n->index);
	ret = ret ?: json_put_bool(jn, "accessible", n->accessible);
	/* nothing else is known about a node KFD refuses to show */
	if (n->accessible) {
		ret = ret ?: json_put_str(jn, "type", type);
		if (n->is_gpu)
			ret = ret ?: node_put_gpu_fields(jn, topo, n);
		else
			ret = ret ?: json_put_u64(jn, "cpu_cores", n->props.cpu_cores_count);
		ret = ret ?: put_model_fields(jn, n);
	}
	if (ret) {
		json_object_put(jn);
		return NULL;
	}
	return jn;
}

static struct json_object *topology_json(const struct kfd_topology *topo, const char *root)
{
	struct json_object *doc = json_object_new_object();
	struct json_object *nodes = json_object_new_array();
	int ret = (doc && nodes) ? 0 : -ENOMEM;

	ret = ret ?: json_put_str(doc, "root", root);
	ret = ret
		      ?: json_put_opt_u64(doc, "generation_id", topo->generation_id,
					  topo->has_generation_id);
	for (size_t i = 0; !ret && i < topo->n_nodes; i++)
		ret = json_append(nodes, node_json(topo, &topo->nodes[i]));
	if (!ret) {
		ret = json_put(doc, "nodes", nodes);
		nodes = NULL; /* owned by doc, or released by json_put */
	}
	json_object_put(nodes);
	if (ret) {
		json_object_put(doc);
		return NULL;
	}
	return doc;
}

static int print_topology_json(const struct kfd_topology *topo, const char *root)
{
	struct json_object *doc = topology_json(topo, root);
	int ret;

	if (!doc) {
		cli_err("topology: out of memory");
		return -ENOMEM;
	}
	ret = json_print(doc);
	json_object_put(doc);
	return ret;
}

/* ---- command ------------------------------------------------------------------ */

int cmd_topology(int argc, char *argv[])
{
	struct topology_opts opts = {0};
	struct kfd_topology topo = {0};
	char err[512];
	const char *root;
	int status, ret;

	status = parse_topology_opts(argc, argv, &opts);
	if (status >= 0)
		return status;
	root = opts.root ? opts.root : KFD_SYSFS_TOPOLOGY;

	ret = topo_load(root, &topo, err, sizeof(err));
	if (ret) {
		cli_err("topology: %s", err);
		return CLI_EXIT_USAGE;
	}
	if (opts.json)
		ret = print_topology_json(&topo, root);
	else
		ret = print_topology_table(&topo);
	topo_free(&topo);
	return ret ? CLI_EXIT_USAGE : CLI_EXIT_OK;
}
