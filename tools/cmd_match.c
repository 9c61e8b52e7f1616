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

#include "options/options.h"
#include "tools/cli.h"
#include "topology/match.h"

struct match_opts {
	const char *from, *to;		   /* topology roots */
	const char *from_nodes, *to_nodes; /* LIST texts, or NULL */
	bool json;
};

/* Everything topo_match() needs, owned here. */
struct match_inputs {
	struct kfd_topology src, dst;
	struct nodelist src_nodes, dst_nodes; /* n == 0: not restricted */
	struct amdgpu_options options;	      /* the restore's KFD_*_CHECK (options/options.h) */
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
		"  0/no turns a check off (default: on), as with the CRIU plugin; they and the\n"
		"  plugin's other options are read as a restore reads them, from the environment\n"
		"  and the options file ('" CLI_NAME " options').\n\n"
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

static int load_inputs(const struct match_opts *opts, struct match_inputs *in)
{
	int ret;

	/* cheap syntax checks first: a typo in LIST should not wait for sysfs */
	ret = match_parse_list("match", "--from-nodes", opts->from_nodes, &in->src_nodes);
	if (ret)
		return ret;
	ret = match_parse_list("match", "--to-nodes", opts->to_nodes, &in->dst_nodes);
	if (ret)
		return ret;
	ret = tool_options_read("match", &in->options);
	if (ret)
		return ret;
	ret = match_load_topology("match", "--from", opts->from, &in->src);
	if (ret)
		return ret;
	ret = match_load_topology("match", "--to", opts->to, &in->dst);
	if (ret)
		return ret;
	ret = match_check_gpu_list("match", "--from-nodes", &in->src, &in->src_nodes);
	if (ret)
		return ret;
	return match_check_gpu_list("match", "--to-nodes", &in->dst, &in->dst_nodes);
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
		.checks = in->options.checks,
	};
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
	ret = json ? match_print_json("match", &res) : match_print_text("match", &res);
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
