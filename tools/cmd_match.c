// SPDX-License-Identifier: MIT
/*
 * amdgpu-criu match --from DIR --to DIR [--from-nodes LIST] [--to-nodes LIST] [--json]
 *
 * Would a process that used the GPUs of one topology restore onto another,
 * and onto which GPUs? Runs the plugin's matcher (topo_match) on two
 * topology trees and prints its map, or the reason there is none.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "match.h"

struct match_opts {
	const char *from, *to;		   /* topology roots */
	const char *from_nodes, *to_nodes; /* LIST texts, or NULL */
	bool json;
};

/* Everything topo_match() needs, owned here. */
struct match_inputs {
	struct kfd_topology src, dst;
	struct nodelist src_nodes, dst_nodes; /* n == 0: not restricted */
	struct match_checks checks;
};

void cmd_match_usage(FILE *out)
{
	fprintf(out,
		"usage: " CLI_NAME
		" match --from DIR --to DIR [--from-nodes LIST] [--to-nodes LIST]\n"
		"                         [--json]\n\n"
		"Map the GPUs a checkpointed process used (source topology) onto the GPUs of a\n"
		"restore host (destination topology) with the plugin's rules, and name the\n"
		"render nodes the restored process must be given.\n\n"
		"options:\n"
		"  -f, --from DIR         source topology root (a directory holding nodes/)\n"
		"  -t, --to DIR           destination topology root (" KFD_SYSFS_TOPOLOGY
		" on this host)\n"
		"  -F, --from-nodes LIST  source GPUs, as KFD node indexes: \"2,3,5-7\"\n"
		"                         (default: every GPU node of the source)\n"
		"  -T, --to-nodes LIST    destination GPUs the restored process may use\n"
		"                         (default: every accessible GPU node of the destination)\n"
		"  -j, --json             print one JSON object\n"
		"  -h, --help             show this help\n\n"
		"environment: KFD_CAPABILITY_CHECK, KFD_VRAM_SIZE_CHECK, KFD_NUM_GWS_CHECK,\n"
		"  KFD_CACHES_COUNT_CHECK, KFD_FW_VER_CHECK, KFD_SDMA_FW_VER_CHECK, "
		"KFD_NUMA_CHECK:\n"
		"  0/no turns a check off (default: on), as with the CRIU plugin.\n\n"
		"exit status: 0 compatible, 1 not compatible, 2 usage error or unusable input\n");
}

/* Returns -1 to go on, or the exit status to end with. */
static int parse_match_opts(int argc, char *argv[], struct match_opts *opts)
{
	static const struct option longopts[] = {
		{"from", required_argument, NULL, 'f'},
		{"to", required_argument, NULL, 't'},
		{"from-nodes", required_argument, NULL, 'F'},
		{"to-nodes", required_argument, NULL, 'T'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f:t:F:T:jh", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			opts->from = optarg;
			break;
		case 't':
			opts->to = optarg;
			break;
		case 'F':
			opts->from_nodes = optarg;
			break;
		case 'T':
			opts->to_nodes = optarg;
			break;
		case 'j':
			opts->json = true;
			break;
		case 'h':
			cmd_match_usage(stdout);
			return CLI_EXIT_OK;
		default:
			return cli_bad_option("match", c, argv);
		}
	}
	if (optind < argc)
		return cli_extra_args("match", argc, argv);
	if (!opts->from || !opts->to) {
		cli_err("match: %s is required (try '" CLI_NAME " help match')",
			opts->from ? "--to" : "--from");
		return CLI_EXIT_USAGE;
	}
	return -1;
}

/* ---- inputs ----------------------------------------------------------------------- */

static int parse_list_opt(const char *opt, const char *text, struct nodelist *list)
{
	char err[256];
	int ret;

	if (!text)
		return 0;
	ret = nodelist_parse(text, list, err, sizeof(err));
	if (ret)
		cli_err("match: %s '%s': %s", opt, text, err);
	return ret;
}

/* Every listed node must be a GPU the matcher can use; say which option is wrong. */
static int check_gpu_list(const char *opt, const struct kfd_topology *topo,
			  const struct nodelist *list)
{
	for (size_t i = 0; i < list->n; i++) {
		const struct kfd_node *n = topo_node(topo, list->nodes[i]);
		const char *problem = NULL;

		if (!n)
			problem = "does not exist";
		else if (!n->accessible)
			problem = "is not accessible";
		else if (!n->is_gpu)
			problem = "is not a GPU (CPU node)";
		if (problem) {
			cli_err("match: %s: node %u %s", opt, list->nodes[i], problem);
			return -EINVAL;
		}
	}
	return 0;
}

static int load_topology(const char *opt, const char *root, struct kfd_topology *topo)
{
	char err[512];
	int ret;

	ret = topo_load(root, topo, err, sizeof(err));
	if (ret)
		cli_err("match: %s: %s", opt, err); /* err names the file */
	return ret;
}

static int load_inputs(const struct match_opts *opts, struct match_inputs *in)
{
	char err[256];
	int ret;

	/* cheap syntax checks first: a typo in LIST should not wait for sysfs */
	ret = parse_list_opt("--from-nodes", opts->from_nodes, &in->src_nodes);
	if (ret)
		return ret;
	ret = parse_list_opt("--to-nodes", opts->to_nodes, &in->dst_nodes);
	if (ret)
		return ret;
	ret = match_checks_from_env(&in->checks, err, sizeof(err));
	if (ret) {
		cli_err("match: %s", err);
		return ret;
	}
	ret = load_topology("--from", opts->from, &in->src);
	if (ret)
		return ret;
	ret = load_topology("--to", opts->to, &in->dst);
	if (ret)
		return ret;
	ret = check_gpu_list("--from-nodes", &in->src, &in->src_nodes);
	if (ret)
		return ret;
	return check_gpu_list("--to-nodes", &in->dst, &in->dst_nodes);
}

static void free_inputs(struct match_inputs *in)
{
	topo_free(&in->src);
	topo_free(&in->dst);
	nodelist_free(&in->src_nodes);
	nodelist_free(&in->dst_nodes);
}

static void build_request(const struct match_inputs *in, struct match_request *req)
{
	*req = (struct match_request){
		.src = &in->src,
		.src_nodes = in->src_nodes.n ? in->src_nodes.nodes : NULL,
		.n_src_nodes = in->src_nodes.n,
		.dst = &in->dst,
		.dst_nodes = in->dst_nodes.n ? in->dst_nodes.nodes : NULL,
		.n_dst_nodes = in->dst_nodes.n,
		.checks = in->checks,
	};
}

/* ---- JSON output ------------------------------------------------------------------- */

static struct json_object *pair_json(const struct match_pair *p)
{
	struct json_object *jp = json_object_new_object();

	if (!jp)
		return NULL;
	if (json_put_u64(jp, "src_node", p->src_node) ||
	    json_put_u64(jp, "src_gpu_id", p->src_gpu_id) ||
	    json_put_u64(jp, "src_render_minor", p->src_render_minor) ||
	    json_put_u64(jp, "dst_node", p->dst_node) ||
	    json_put_u64(jp, "dst_gpu_id", p->dst_gpu_id) ||
	    json_put_u64(jp, "dst_render_minor", p->dst_render_minor)) {
		json_object_put(jp);
		return NULL;
	}
	return jp;
}

static struct json_object *map_json(const struct match_result *res)
{
	struct json_object *map = json_object_new_array();

	for (size_t i = 0; map && i < res->n_map; i++) {
		if (json_append(map, pair_json(&res->map[i]))) {
			json_object_put(map);
			map = NULL;
		}
	}
	return map;
}

static struct json_object *result_json(const struct match_result *res)
{
	struct json_object *doc = json_object_new_object();
	int ret;

	if (!doc)
		return NULL;
	ret = json_put_bool(doc, "compatible", res->compatible);
	if (res->compatible)
		ret = ret ?: json_put(doc, "map", map_json(res));
	else
		ret = ret ?: json_put_str(doc, "reason", res->reason);
	if (ret) {
		json_object_put(doc);
		return NULL;
	}
	return doc;
}

static int print_result_json(const struct match_result *res)
{
	struct json_object *doc = result_json(res);
	int ret;

	if (!doc) {
		cli_err("match: out of memory");
		return -ENOMEM;
	}
	ret = json_print(doc);
	json_object_put(doc);
	return ret;
}

/* ---- text output ------------------------------------------------------------------- */

enum map_col {
	MCOL_SRC_NODE,
	MCOL_SRC_GPU_ID,
	MCOL_SRC_RENDER,
	MCOL_DST_NODE,
	MCOL_DST_GPU_ID,
	MCOL_DST_RENDER,
	MCOL__COUNT,
};

static const struct table_column map_columns[MCOL__COUNT] = {
	[MCOL_SRC_NODE] = {"SRC_NODE", true},	   [MCOL_SRC_GPU_ID] = {"SRC_GPU_ID", true},
	[MCOL_SRC_RENDER] = {"SRC_RENDER", false}, [MCOL_DST_NODE] = {"DST_NODE", true},
	[MCOL_DST_GPU_ID] = {"DST_GPU_ID", true},  [MCOL_DST_RENDER] = {"DST_RENDER", false},
};

static int add_pair_row(struct table *table, const struct match_pair *p)
{
	char src_node[FMT_SHORT], src_id[FMT_SHORT], src_render[FMT_SHORT];
	char dst_node[FMT_SHORT], dst_id[FMT_SHORT], dst_render[FMT_SHORT];
	const char *cells[MCOL__COUNT] = {
		[MCOL_SRC_NODE] = src_node,
		[MCOL_SRC_GPU_ID] = src_id,
		[MCOL_SRC_RENDER] =
			fmt_render_node(p->src_render_minor, src_render, sizeof(src_render)),
		[MCOL_DST_NODE] = dst_node,
		[MCOL_DST_GPU_ID] = dst_id,
		[MCOL_DST_RENDER] =
			fmt_render_node(p->dst_render_minor, dst_render, sizeof(dst_render)),
	};

	snprintf(src_node, sizeof(src_node), "%u", p->src_node);
	snprintf(src_id, sizeof(src_id), "%u", p->src_gpu_id);
	snprintf(dst_node, sizeof(dst_node), "%u", p->dst_node);
	snprintf(dst_id, sizeof(dst_id), "%u", p->dst_gpu_id);
	return table_add_row(table, cells);
}

static int compare_pairs_by_dst(const void *a, const void *b)
{
	const struct match_pair *pa = a, *pb = b;

	return (pa->dst_node > pb->dst_node) - (pa->dst_node < pb->dst_node);
}

/*
 * "expose: renderD160 renderD161 (nodes 18,19)": what the restored process's
 * container needs, in destination node order.
 */
static int print_expose_line(const struct match_result *res)
{
	struct match_pair *by_dst = calloc(res->n_map ? res->n_map : 1, sizeof(*by_dst));
	uint32_t *nodes = calloc(res->n_map ? res->n_map : 1, sizeof(*nodes));
	char render[FMT_SHORT], list[1024];

	if (!by_dst || !nodes) {
		free(by_dst);
		free(nodes);
		cli_err("match: out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < res->n_map; i++)
		by_dst[i] = res->map[i];
	qsort(by_dst, res->n_map, sizeof(*by_dst), compare_pairs_by_dst);
	fputs("expose:", stdout);
	for (size_t i = 0; i < res->n_map; i++) {
		nodes[i] = by_dst[i].dst_node;
		if (by_dst[i].dst_render_minor)
			printf(" %s",
			       fmt_render_node(by_dst[i].dst_render_minor, render, sizeof(render)));
	}
	printf(" (nodes %s)\n", nodelist_format(nodes, res->n_map, list, sizeof(list)));
	free(by_dst);
	free(nodes);
	return 0;
}

static int print_result_text(const struct match_result *res)
{
	struct table table;
	int ret = 0;

	if (!res->compatible) {
		printf("not compatible: %s\n", res->reason);
		return 0;
	}
	table_init(&table, map_columns, MCOL__COUNT);
	for (size_t i = 0; i < res->n_map && !ret; i++)
		ret = add_pair_row(&table, &res->map[i]);
	if (ret) {
		cli_err("match: out of memory");
	} else {
		table_print(&table, stdout);
		ret = print_expose_line(res);
	}
	table_free(&table);
	return ret;
}

/* ---- command ---------------------------------------------------------------------- */

static int run_match(const struct match_inputs *in, bool json)
{
	struct match_request req;
	struct match_result res = {0};
	int ret, status;

	build_request(in, &req);
	ret = topo_match(&req, &res);
	if (ret < 0) {
		cli_err("match: %s", res.reason);
		status = CLI_EXIT_USAGE;
		goto out;
	}
	ret = json ? print_result_json(&res) : print_result_text(&res);
	if (ret)
		status = CLI_EXIT_USAGE;
	else
		status = res.compatible ? CLI_EXIT_OK : CLI_EXIT_NO;
out:
	match_result_free(&res);
	return status;
}

int cmd_match(int argc, char *argv[])
{
	struct match_opts opts = {0};
	struct match_inputs in = {0};
	int status;

	status = parse_match_opts(argc, argv, &opts);
	if (status >= 0)
		return status;
	if (load_inputs(&opts, &in))
		status = CLI_EXIT_USAGE;
	else
		status = run_match(&in, opts.json);
	free_inputs(&in);
	return status;
}
