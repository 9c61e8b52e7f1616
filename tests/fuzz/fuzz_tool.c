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
 * and every one must end with exit status 0, 1 or 2, print (stdout and
 * stderr, captured) text without control characters or raw bytes from the
 * images (they are escaped), and leave the tree as it
 * was: names, types, sizes and modification times (inspect and check only
 * read). Sanitizers and leak detection watch the rest; their reports go to
 * the real stderr (fuzz_common.c).
 */
#include <ftw.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

/*
 * Runs the command with stdout and stderr going to a memfd; returns what it
 * printed (at most OUT_MAX bytes, NUL-terminated, in out).
 */
#define OUT_MAX (1u << 20)

static int run_captured(int argc, char *argv[], char *out, size_t *len)
{
	static int out_fd = -1;
	int saved_out, saved_err, status;
	ssize_t n;

	if (out_fd < 0)
		out_fd = memfd_create("fuzz-tool-out", MFD_CLOEXEC);
	FUZZ_ASSERT(out_fd >= 0 && !ftruncate(out_fd, 0) && !lseek(out_fd, 0, SEEK_SET),
		    "no memfd for the tool's output");
	fflush(stdout);
	fflush(stderr);
	saved_out = dup(1);
	saved_err = dup(2);
	dup2(out_fd, 1);
	dup2(out_fd, 2);
	optind = 0; /* glibc: start getopt afresh */
	status = amdgpu_criu_main(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, 1);
	dup2(saved_err, 2);
	close(saved_out);
	close(saved_err);
	n = pread(out_fd, out, OUT_MAX, 0);
	*len = n > 0 ? (size_t)n : 0;
	out[*len] = 0;
	return status;
}

/* Text output is one line per line: printable ASCII, tabs and newlines only. */
static void check_text(const char *cmd, const char *out, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)out[i];

		FUZZ_ASSERT((c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t',
			    "%s: byte 0x%02x at %zu of the text output: %.200s", cmd, c, i, out);
	}
}

static void run(const char *img, const char *sysfs, const char *const *args)
{
	static char out[OUT_MAX + 1];
	char buf[MAX_ARGS][300], *argv[MAX_ARGS + 1];
	int argc = 0, status;
	bool json = false;
	size_t len;

	for (; args[argc]; argc++) {
		const char *a = !strcmp(args[argc], "IMG")     ? img
				: !strcmp(args[argc], "SYSFS") ? sysfs
							       : args[argc];

		json |= !strcmp(a, "--json");
		snprintf(buf[argc], sizeof(buf[argc]), "%s", a);
		argv[argc] = buf[argc];
	}
	argv[argc] = NULL;
	status = run_captured(argc, argv, out, &len);
	FUZZ_ASSERT(status >= 0 && status <= 2, "%s %s: exit status %d", args[1], args[2], status);
	if (!json)
		check_text(args[1], out, len);
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
