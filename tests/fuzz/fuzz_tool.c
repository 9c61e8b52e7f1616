// SPDX-License-Identifier: MIT
/*
 * Fuzz target: `amdgpu-criu inspect` and `amdgpu-criu check` on an image
 * directory, run in-process through the tool's own main() (tools/amdgpu-criu.c
 * is compiled for this target with main renamed to amdgpu_criu_main).
 *
 * Input: a file tree in the fuzz_tree.h encoding. Entries under img/ form
 * the image directory, entries under sysfs/ the restore host's topology:
 *   ==> img/amdgpu-kfd-1.img <==
 *   ...
 *   ==> sysfs/nodes/0/properties <==
 *   ...
 * Each input runs
 *   inspect --verify IMG, inspect --json --verify IMG,
 *   check IMG --sysfs SYSFS, check IMG --sysfs SYSFS --json
 * and every one must end with exit status 0, 1 or 2 (sanitizers and leak
 * detection watch the rest). The tool prints; run with -close_fd_mask=3.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_common.h"
#include "fuzz_tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int amdgpu_criu_main(int argc, char *argv[]);

#define MAX_ARGS 8

static void run(const char *img, const char *sysfs, const char *const *args)
{
	char buf[MAX_ARGS][300], *argv[MAX_ARGS + 1];
	int argc = 0, status;

	for (; args[argc]; argc++) {
		const char *a = !strcmp(args[argc], "IMG")     ? img
				: !strcmp(args[argc], "SYSFS") ? sysfs
							       : args[argc];

		snprintf(buf[argc], sizeof(buf[argc]), "%s", a);
		argv[argc] = buf[argc];
	}
	argv[argc] = NULL;
	optind = 0; /* glibc: start getopt afresh */
	status = amdgpu_criu_main(argc, argv);
	fflush(stdout);
	FUZZ_ASSERT(status >= 0 && status <= 2, "%s %s: exit status %d", args[1], args[2], status);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const cmds[][MAX_ARGS] = {
		{"amdgpu-criu", "inspect", "--verify", "IMG", NULL},
		{"amdgpu-criu", "inspect", "--json", "--verify", "IMG", NULL},
		{"amdgpu-criu", "check", "IMG", "--sysfs", "SYSFS", NULL},
		{"amdgpu-criu", "check", "IMG", "--sysfs", "SYSFS", "--json", NULL},
	};
	char img[280], sysfs[280];

	snprintf(img, sizeof(img), "%s/img", fuzz_scratch());
	snprintf(sysfs, sizeof(sysfs), "%s/sysfs", fuzz_scratch());
	fuzz_tree_write(fuzz_scratch(), data, size);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		run(img, sysfs, cmds[i]);
	fuzz_done();
	return 0;
}
