// SPDX-License-Identifier: MIT
/*
 * amdgpu-criu check IMGDIR [--sysfs DIR] [--to-nodes LIST] [--json]
 *
 * Can this checkpoint be restored here, and onto which GPUs? The GPUs the
 * checkpoint needs (every process and render image, ckpt_source.c) are
 * matched onto the local topology with the plugin's matcher; the answer is
 * printed like `match`, with the devices the restored process must see.
 * Without --sysfs the running kernel must also take the images' private data
 * layout (BO record size), and each local GPU of the map must have the free
 * VRAM the checkpoint's BOs need there (KFD's AVAILABLE_MEMORY, as the
 * plugin checks it: images/vram_check.h); without access to /dev/kfd that
 * check is skipped, and the output says so.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "options/options.h"
#include "tools/cli.h"
#include "common/escape.h"
#include "tools/ckpt.h"
#include "topology/gpu_select.h"
#include "topology/match.h"
#include "images/vram_check.h"

struct check_opts {
	const char *dir;
	const char *sysfs; /* NULL: this host, and the kernel check runs */
	const char *to_nodes;
	bool json;
};

struct check_inputs {
	struct ckpt ck;
	bool ck_loaded;
	struct ckpt_source src;
	struct kfd_topology dst;
	struct nodelist dst_nodes;
	struct amdgpu_options options; /* as the restore reads them (options/options.h) */
};

void cmd_check_usage(FILE *out)
{
	fprintf(out,
		"usage: " CLI_NAME " check IMGDIR [--sysfs DIR] [--to-nodes LIST] [--json]\n\n"
		"Tell whether the checkpoint in IMGDIR can be restored on this host (or on the\n"
		"host whose topology is under DIR), onto which GPUs, and which devices the\n"
		"restored process must be given. Without --sysfs the running kernel must take\n"
		"the checkpoint's private data layout (BO record size).\n\n"
		"options:\n"
		"  -s, --sysfs DIR        restore host topology (a directory holding nodes/)\n"
		"                         instead of " KFD_SYSFS_TOPOLOGY ";\n"
		"                         skips the kernel check\n"
		"  -T, --to-nodes LIST    GPUs the restored process may use: \"2,3,5-7\"\n"
		"                         (default: every accessible GPU node)\n"
		"  -j, --json             print one JSON object\n"
		"  -h, --help             show this help\n\n"
		"environment: the plugin's options, from the environment and its options\n"
		"  file, as a restore reads them ('" CLI_NAME " options'): one that means\n"
		"  nothing is refused as the restore would refuse it; the KFD_*_CHECK ones\n"
		"  relax the match, and " GPU_SELECT_ENV " names the GPUs a restore may use\n"
		"  when --to-nodes is not given.\n\n"
		"exit status: 0 compatible, 1 not compatible, 2 usage error or unusable input\n");
}

/* Returns -1 to go on, or the exit status to end with. */
static int parse_check_opts(int argc, char *argv[], struct check_opts *opts)
{
	static const struct option longopts[] = {
		{"sysfs", required_argument, NULL, 's'},
		{"to-nodes", required_argument, NULL, 'T'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:T:jh", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			opts->sysfs = optarg;
			break;
		case 'T':
			opts->to_nodes = optarg;
			break;
		case 'j':
			opts->json = true;
			break;
		case 'h':
			cmd_check_usage(stdout);
			return CLI_EXIT_OK;
		default:
			return cli_bad_option("check", c, argv);
		}
	}
	if (optind == argc) {
		cli_err("check: IMGDIR is required (try '" CLI_NAME " help check')");
		return CLI_EXIT_USAGE;
	}
	opts->dir = argv[optind++];
	return optind < argc ? cli_extra_args("check", argc, argv) : -1;
}

/* ---- the kernel check ------------------------------------------------------------------ */

/*
 * 0 and res untouched if every process image has the running kernel's BO
 * record size; 0 and res "not compatible" if one does not; -EINVAL (reported)
 * if the running kernel's size cannot be told.
 */
static int check_kernel(const struct ckpt *ck, struct match_result *res)
{
	const struct kfd_process_image *misfit;
	char name[KFD_IMAGE_NAME_MAX], release[ESCAPE_BUF];
	struct utsname u;
	uint32_t local;

	if (uname(&u)) {
		cli_err("check: uname: %s", strerror(errno));
		return -EINVAL;
	}
	local = priv_bo_record_for_release(u.release);
	if (!local) {
		cli_err("check: cannot tell the private data layout of kernel '%s'", u.release);
		return -EINVAL;
	}
	misfit = kfd_image_layout_misfit(ck->procs, ck->n_procs, local);
	res->compatible = !misfit;
	if (!misfit)
		return 0;
	kfd_image_name(name, sizeof(name), KFD_IMAGE_PROCESS, misfit->id);
	snprintf(res->reason, sizeof(res->reason),
		 "%s was dumped on kernel %s, whose private data has %u-byte BO records; this "
		 "kernel (%s) takes %u-byte records",
		 name, str_escape(misfit->entry->kernel_release, release, sizeof(release)),
		 misfit->entry->bo_record_size, u.release, local);
	return 0;
}

/* ---- inputs -------------------------------------------------------------------------------- */

static int load_inputs(const struct check_opts *opts, struct check_inputs *in)
{
	int ret;

	ret = match_parse_list("check", "--to-nodes", opts->to_nodes, &in->dst_nodes);
	if (ret)
		return ret;
	ret = tool_options_read("check", &in->options);
	if (ret)
		return ret;
	/* the restore's own order and refusals (checkpoint/ckpt.h) */
	ret = tool_ckpt_open("check", opts->dir, &in->ck);
	if (ret)
		return ret;
	in->ck_loaded = true;
	ret = tool_ckpt_source("check", &in->ck, &in->src);
	return ret ?: tool_ckpt_contents("check", &in->ck);
}

/* Without --to-nodes, the GPUs AMDGPU_CRIU_GPUS names, as the plugin would use them. */
static int nodes_from_env(struct check_inputs *in)
{
	const struct gpu_select *sel = &in->options.gpus;
	char err[600];

	if (in->dst_nodes.n || gpu_select_all(sel))
		return 0;
	if (gpu_select_check(sel, &in->dst, err, sizeof(err))) {
		cli_err("check: %s", err);
		return -ENODEV;
	}
	in->dst_nodes.nodes = calloc(in->dst.n_nodes + 1, sizeof(*in->dst_nodes.nodes));
	if (!in->dst_nodes.nodes)
		return -ENOMEM;
	in->dst_nodes.n = gpu_select_nodes(sel, &in->dst, in->dst_nodes.nodes, NULL);
	return 0;
}

static int load_destination(const struct check_opts *opts, struct check_inputs *in)
{
	const char *root = opts->sysfs ? opts->sysfs : KFD_SYSFS_TOPOLOGY;
	int ret;

	ret = match_load_topology("check", opts->sysfs ? "--sysfs" : "local topology", root,
				  &in->dst);
	if (!ret)
		ret = nodes_from_env(in);
	return ret ?: match_check_gpu_list("check", "--to-nodes", &in->dst, &in->dst_nodes);
}

static void free_inputs(struct check_inputs *in)
{
	if (in->ck_loaded)
		tool_ckpt_close(&in->ck);
	ckpt_source_free(&in->src);
	topo_free(&in->dst);
	nodelist_free(&in->dst_nodes);
}

static int run_matcher(const struct check_inputs *in, struct match_result *res)
{
	struct match_request req = {
		.src = &in->src.topo,
		.src_nodes = in->src.nodes,
		.n_src_nodes = in->src.n_nodes,
		.dst = &in->dst,
		.dst_nodes = in->dst_nodes.n ? in->dst_nodes.nodes : NULL,
		.n_dst_nodes = in->dst_nodes.n,
		.checks = in->options.checks,
	};
	int ret = topo_match(&req, res);

	/* the images were validated: a source error still names where the source came from */
	if (ret < 0 && !strncmp(res->reason, "source", 6))
		cli_err("check: %s: the GPUs recorded in the images: %s", in->ck.dir, res->reason);
	else if (ret < 0)
		cli_err("check: %s", res->reason);
	return ret;
}

/*
 * Free VRAM on the map's local GPUs (this host only). A GPU too full makes
 * the result "not compatible" with the plugin's reason; *how is "ok",
 * "failed" or "not checked: WHY" (static or in buf).
 */
static void check_vram(const struct check_inputs *in, struct match_result *res, const char **how,
		       char *buf, size_t len)
{
	struct vram_verdict v;
	int fd = open("/dev/kfd", O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		snprintf(buf, len, "not checked: cannot open /dev/kfd: %s", strerror(errno));
		*how = buf;
		return;
	}
	vram_check(in->ck.procs, in->ck.n_procs, res, vram_kfd_free, &fd, &v);
	close(fd);
	*how = "ok";
	if (v.unchecked) {
		snprintf(buf, len, "not checked on %zu GPUs: GPU %u: AVAILABLE_MEMORY: %s",
			 v.unchecked, v.unchecked_gpu, strerror(-v.unchecked_err));
		*how = buf;
	}
	if (!v.short_of)
		return;
	*how = "failed";
	res->compatible = false;
	snprintf(res->reason, sizeof(res->reason),
		 "checkpointed GPU %u (node %u) needs %llu bytes (%llu MiB) of VRAM, but local GPU "
		 "%u (node %u, renderD%u) has %llu bytes (%llu MiB) free",
		 v.pair.src_gpu_id, v.pair.src_node, (unsigned long long)v.need,
		 (unsigned long long)v.need >> 20, v.pair.dst_gpu_id, v.pair.dst_node,
		 v.pair.dst_render_minor, (unsigned long long)v.free,
		 (unsigned long long)v.free >> 20);
}

/* ---- output -------------------------------------------------------------------------------- */

static const char skipped_note[] = "--sysfs given: the kernel check (private data layout) "
				   "was skipped";

static int compare_by_dst(const void *a, const void *b)
{
	const struct match_pair *pa = a, *pb = b;

	return (pa->dst_node > pb->dst_node) - (pa->dst_node < pb->dst_node);
}

/* The map's pairs in destination node order (malloc'ed), NULL on no memory. */
static struct match_pair *pairs_by_dst(const struct match_result *res)
{
	struct match_pair *p = calloc(res->n_map + 1, sizeof(*p));

	if (!p)
		return NULL;
	memcpy(p, res->map, res->n_map * sizeof(*p));
	qsort(p, res->n_map, sizeof(*p), compare_by_dst);
	return p;
}

static int print_devices_text(const struct match_result *res)
{
	struct match_pair *p = pairs_by_dst(res);
	char render[FMT_SHORT];

	if (!p) {
		cli_err("check: out of memory");
		return -ENOMEM;
	}
	fputs("devices: /dev/kfd", stdout);
	for (size_t i = 0; i < res->n_map; i++)
		printf(" /dev/dri/%s (node %u, gpu_id %u)",
		       fmt_render_node(p[i].dst_render_minor, render, sizeof(render)),
		       p[i].dst_node, p[i].dst_gpu_id);
	putchar('\n');
	free(p);
	return 0;
}

static int print_text(const struct check_opts *opts, const struct match_result *res,
		      const char *vram_check)
{
	int ret = match_print_text("check", res);

	if (!ret && res->compatible)
		ret = print_devices_text(res);
	if (!ret && opts->sysfs)
		printf("note: %s\n", skipped_note);
	if (!ret && strncmp(vram_check, "not checked", 11) == 0)
		printf("note: free VRAM %s\n", vram_check);
	return ret;
}

static struct json_object *device_json(const struct match_pair *p)
{
	struct json_object *o = json_object_new_object();
	char render[FMT_SHORT], path[FMT_LONG];

	snprintf(path, sizeof(path), "/dev/dri/%s",
		 fmt_render_node(p->dst_render_minor, render, sizeof(render)));
	if (o &&
	    (json_put_u64(o, "node", p->dst_node) || json_put_u64(o, "gpu_id", p->dst_gpu_id) ||
	     json_put_u64(o, "render_minor", p->dst_render_minor) ||
	     json_put_opt_str(o, "render_device", p->dst_render_minor ? path : NULL))) {
		json_object_put(o);
		o = NULL;
	}
	return o;
}

static struct json_object *expose_json(const struct match_result *res)
{
	struct match_pair *p = pairs_by_dst(res);
	struct json_object *arr = p ? json_object_new_array() : NULL;

	for (size_t i = 0; arr && i < res->n_map; i++) {
		if (json_append(arr, device_json(&p[i]))) {
			json_object_put(arr);
			arr = NULL;
		}
	}
	free(p);
	return arr;
}

static int print_json(const struct check_opts *opts, const struct match_result *res,
		      const char *kernel_check, const char *vram_check)
{
	struct json_object *doc = match_result_json(res);
	int ret = doc ? 0 : -ENOMEM;

	if (res->compatible)
		ret = ret ?: json_put(doc, "expose", expose_json(res));
	ret = ret ?: json_put_str(doc, "kernel_check", kernel_check);
	ret = ret ?: json_put_str(doc, "vram_check", vram_check);
	if (opts->sysfs)
		ret = ret ?: json_put_str(doc, "note", skipped_note);
	if (ret)
		cli_err("check: out of memory");
	else
		ret = json_print(doc);
	json_object_put(doc);
	return ret;
}

static int print_result(const struct check_opts *opts, const struct match_result *res,
			const char *kernel_check, const char *vram_check)
{
	int ret = opts->json ? print_json(opts, res, kernel_check, vram_check)
			     : print_text(opts, res, vram_check);

	if (ret)
		return CLI_EXIT_USAGE;
	return res->compatible ? CLI_EXIT_OK : CLI_EXIT_NO;
}

/* ---- command ------------------------------------------------------------------------------- */

static int run_check(const struct check_opts *opts, struct check_inputs *in)
{
	struct match_result res = {0};
	const char *kernel_check = "skipped", *vram_check = "not checked: --sysfs given";
	int status = CLI_EXIT_USAGE;
	char vram_buf[256];

	if (!opts->sysfs) {
		if (check_kernel(&in->ck, &res))
			goto out;
		kernel_check = res.compatible ? "ok" : "failed";
		if (!res.compatible) {
			status = print_result(opts, &res, kernel_check, "skipped");
			goto out;
		}
	}
	if (load_destination(opts, in) || run_matcher(in, &res) < 0)
		goto out;
	if (!opts->sysfs && res.compatible)
		check_vram(in, &res, &vram_check, vram_buf, sizeof(vram_buf));
	status = print_result(opts, &res, kernel_check, vram_check);
out:
	match_result_free(&res);
	return status;
}

int cmd_check(int argc, char *argv[])
{
	struct check_opts opts = {0};
	struct check_inputs in = {0};
	int status;

	status = parse_check_opts(argc, argv, &opts);
	if (status >= 0)
		return status;
	if (load_inputs(&opts, &in))
		status = CLI_EXIT_USAGE;
	else
		status = run_check(&opts, &in);
	free_inputs(&in);
	return status;
}
