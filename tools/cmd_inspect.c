// SPDX-License-Identifier: MIT
/*
 * amdgpu-criu inspect IMGDIR [--json] [--verify]
 *
 * What a checkpoint holds: per checkpointed /dev/kfd file the kernel and KFD
 * it came from, the process, its GPUs as the dump node recorded them, its
 * BOs by type, queues, events and SVM ranges; the render-node files. With
 * --verify, every BO content file is read and checked against its index.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "tools/cli.h"
#include "tools/ckpt.h"

struct inspect_opts {
	const char *dir;
	bool json;
	bool verify;
};

void cmd_inspect_usage(FILE *out)
{
	fprintf(out,
		"usage: " CLI_NAME " inspect IMGDIR [--json] [--verify]\n\n"
		"Show what the amdgpu images of a CRIU image directory hold: for every\n"
		"amdgpu-kfd-<id>.img the kernel and KFD version it was dumped on, the process\n"
		"(pid, xnack), its GPUs (user and dump-node gpu_id, node, render node and the\n"
		"recorded node's properties), its BOs by type and bytes per GPU, queues,\n"
		"events and SVM ranges; then the amdgpu-render-<id>.img files.\n\n"
		"options:\n"
		"  -j, --json    print one JSON object\n"
		"  -v, --verify  read every BO content file and check each chunk's checksum\n"
		"                and the sizes against the metadata; report per GPU\n"
		"  -h, --help    show this help\n\n"
		"exit status: 0 success (with --verify: all contents intact), 1 damaged\n"
		"contents (--verify), 2 usage error or unusable images\n");
}

/* Returns -1 to go on, or the exit status to end with. */
static int parse_inspect_opts(int argc, char *argv[], struct inspect_opts *opts)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"verify", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			opts->json = true;
			break;
		case 'v':
			opts->verify = true;
			break;
		case 'h':
			cmd_inspect_usage(stdout);
			return CLI_EXIT_OK;
		default:
			return cli_bad_option("inspect", c, argv);
		}
	}
	if (optind == argc) {
		cli_err("inspect: IMGDIR is required (try '" CLI_NAME " help inspect')");
		return CLI_EXIT_USAGE;
	}
	opts->dir = argv[optind++];
	return optind < argc ? cli_extra_args("inspect", argc, argv) : -1;
}

/* Text is built in memory first: stdout stays empty if anything fails. */
static int print_text(const struct inspect_report *rep)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	int ret;

	if (!mem) {
		cli_err("inspect: out of memory");
		return -1;
	}
	ret = inspect_print_text(mem, rep);
	if (fclose(mem) && !ret) {
		cli_err("inspect: out of memory");
		ret = -1;
	}
	if (!ret)
		fwrite(text, 1, len, stdout);
	free(text);
	return ret;
}

int cmd_inspect(int argc, char *argv[])
{
	struct inspect_opts opts = {0};
	struct inspect_report rep;
	struct ckpt_source src = {0};
	struct ckpt ck;
	int status, ret;

	status = parse_inspect_opts(argc, argv, &opts);
	if (status >= 0)
		return status;
	if (tool_ckpt_open("inspect", opts.dir, &ck))
		return CLI_EXIT_USAGE;
	/* images the restore would refuse as one checkpoint are refused here too */
	ret = tool_ckpt_source("inspect", &ck, &src);
	ckpt_source_free(&src);
	if (ret) {
		tool_ckpt_close(&ck);
		return CLI_EXIT_USAGE;
	}
	ret = inspect_report_build("inspect", &ck, opts.verify, &rep);
	if (!ret) {
		ret = opts.json ? inspect_print_json(&rep) : print_text(&rep);
		status = ret ? CLI_EXIT_USAGE : rep.damaged ? CLI_EXIT_NO : CLI_EXIT_OK;
		inspect_report_free(&rep);
	} else {
		status = CLI_EXIT_USAGE;
	}
	tool_ckpt_close(&ck);
	return status;
}
