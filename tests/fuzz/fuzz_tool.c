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
 * and every one must end with exit status 0, 1 or 2 and leave the tree as
 * it was: names, types, sizes and modification times (inspect and check
 * only read). Sanitizers and leak detection watch the rest. The tool
 * prints; run with -close_fd_mask=3.
 */
#include <ftw.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"
#include "fuzz_tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int amdgpu_criu_main(int argc, char *argv[]);

#define MAX_ARGS 8

/* FNV-1a over every entry's path, mode, size and mtime: what a change would alter. */
static uint64_t tree_hash;

static void hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--)
		tree_hash = (tree_hash ^ *b++) * 0x100000001b3ull;
}

static int hash_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)type;
	(void)ftw;
	hash_bytes(path, strlen(path) + 1);
	hash_bytes(&st->st_mode, sizeof(st->st_mode));
	hash_bytes(&st->st_size, sizeof(st->st_size));
	hash_bytes(&st->st_mtim, sizeof(st->st_mtim));
	return 0;
}

static uint64_t snapshot(const char *dir)
{
	tree_hash = 0xcbf29ce484222325ull;
	FUZZ_ASSERT(!nftw(dir, hash_entry, 16, FTW_PHYS), "cannot walk %s", dir);
	return tree_hash;
}

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
	uint64_t before;

	snprintf(img, sizeof(img), "%s/img", fuzz_scratch());
	snprintf(sysfs, sizeof(sysfs), "%s/sysfs", fuzz_scratch());
	fuzz_tree_write(fuzz_scratch(), data, size);
	before = snapshot(fuzz_scratch());
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		run(img, sysfs, cmds[i]);
	FUZZ_ASSERT(snapshot(fuzz_scratch()) == before, "the tool changed the image or sysfs tree");
	fuzz_done();
	return 0;
}
