// SPDX-License-Identifier: MIT
/*
 * Scratch directories and the "fuzz tree" encoding (see fuzz_tree.h).
 *
 * Everything is made with *at() calls relative to the scratch directory and
 * O_NOFOLLOW, and names are checked component by component, so no input can
 * make or touch anything outside it.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "fuzz_tree.h"

void fuzz_scratch_make(char *path, size_t len)
{
	const char *base = getenv("TMPDIR");
	struct stat st;

	if (!stat("/dev/shm", &st) && S_ISDIR(st.st_mode) && !access("/dev/shm", W_OK))
		base = "/dev/shm";
	else if (!base || !*base)
		base = "/tmp";
	if ((size_t)snprintf(path, len, "%s/amdgpu-fuzz-XXXXXX", base) >= len || !mkdtemp(path)) {
		fprintf(stderr, "fuzz: cannot make a scratch directory under %s: %s\n", base,
			strerror(errno));
		abort();
	}
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	if (ftw->level == 0)
		return 0;
	if (type == FTW_DP ? rmdir(path) : unlink(path)) {
		fprintf(stderr, "fuzz: cannot remove %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

void fuzz_scratch_clear(const char *dir)
{
	if (nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT))
		abort();
}

void fuzz_scratch_remove(const char *dir)
{
	fuzz_scratch_clear(dir);
	rmdir(dir);
}

/* ---- decoding -------------------------------------------------------------------------- */

struct entry {
	char name[FUZZ_TREE_MAX_NAME + 1];
	char kind[32];
	const uint8_t *data;
	size_t len;
};

/* A relative name of at most FUZZ_TREE_MAX_DEPTH components, none of them "", "." or "..". */
static bool name_ok(const char *name)
{
	unsigned int depth = 0;
	const char *p = name, *slash;
	size_t n;

	if (!*name)
		return false;
	for (;;) {
		slash = strchr(p, '/');
		n = slash ? (size_t)(slash - p) : strlen(p);
		if (!n || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (++depth > FUZZ_TREE_MAX_DEPTH)
			return false;
		if (!slash)
			return true;
		p = slash + 1;
	}
}

/* A symlink target that stays inside the tree: relative, no ".." component. */
static bool target_ok(const char *t)
{
	const char *p = t;

	if (!*t || *t == '/')
		return false;
	while ((p = strstr(p, "..")))
		if ((p == t || p[-1] == '/') && (p[2] == '/' || !p[2]))
			return false;
		else
			p += 2;
	return true;
}

/* Parses the header at data[*pos]; on return *pos is the start of the next header (or len). */
static bool next_entry(const uint8_t *data, size_t len, size_t *pos, struct entry *e)
{
	const uint8_t *start = data + *pos, *end = data + len, *nl, *tail, *next;
	size_t head = strlen(FUZZ_TREE_HEAD), n;

	nl = memchr(start, '\n', (size_t)(end - start));
	next = nl ? memmem(nl, (size_t)(end - nl), "\n" FUZZ_TREE_HEAD, head + 1) : NULL;
	*pos = next ? (size_t)(next + 1 - data) : len;
	if (!nl || (size_t)(nl - start) < head || memcmp(start, FUZZ_TREE_HEAD, head))
		return false;
	tail = memmem(start + head, (size_t)(nl - start - head), FUZZ_TREE_TAIL,
		      strlen(FUZZ_TREE_TAIL));
	if (!tail)
		return false;
	n = (size_t)(tail - start - head);
	if (n > FUZZ_TREE_MAX_NAME || memchr(start + head, 0, n))
		return false;
	memcpy(e->name, start + head, n);
	e->name[n] = 0;
	e->kind[0] = 0;
	tail += strlen(FUZZ_TREE_TAIL);
	if (tail < nl && *tail == ' ') {
		n = (size_t)(nl - tail - 1);
		if (n >= sizeof(e->kind) || memchr(tail + 1, 0, n))
			return false;
		memcpy(e->kind, tail + 1, n);
		e->kind[n] = 0;
	} else if (tail != nl) {
		return false;
	}
	e->data = nl + 1;
	e->len = (size_t)(data + *pos - e->data);
	return name_ok(e->name);
}

/* mkdir -p of the directories of e->name below dir_fd. */
static void make_parents(int dir_fd, const char *name)
{
	char path[FUZZ_TREE_MAX_NAME + 1];
	char *slash = path;

	strcpy(path, name);
	while ((slash = strchr(slash, '/'))) {
		*slash = 0;
		mkdirat(dir_fd, path, 0700);
		*slash++ = '/';
	}
}

static void write_file(int dir_fd, const struct entry *e, long long size)
{
	int fd =
		openat(dir_fd, e->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	size_t done = 0;
	ssize_t n;

	if (fd < 0)
		return;
	while (done < e->len) {
		n = write(fd, e->data + done, e->len - done);
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	if (size >= 0 && ftruncate(fd, size))
		fprintf(stderr, "fuzz: truncate %s: %s\n", e->name, strerror(errno));
	close(fd);
}

static void make_symlink(int dir_fd, const struct entry *e)
{
	char target[FUZZ_TREE_MAX_NAME + 1];
	size_t n = e->len;

	if (n && e->data[n - 1] == '\n')
		n--;
	if (n > FUZZ_TREE_MAX_NAME || memchr(e->data, 0, n))
		return;
	memcpy(target, e->data, n);
	target[n] = 0;
	if (target_ok(target))
		symlinkat(target, dir_fd, e->name);
}

/* "size N" with 0 <= N <= FUZZ_TREE_MAX_SIZE, else -1. */
static long long given_size(const char *kind)
{
	unsigned long long v = 0;
	const char *p = kind + strlen("size ");

	if (!*p)
		return -1;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (unsigned)(*p - '0');
		if (v > FUZZ_TREE_MAX_SIZE)
			return -1;
	}
	return (long long)v;
}

static void make_entry(int dir_fd, const struct entry *e, bool fifo_ok)
{
	long long size;

	make_parents(dir_fd, e->name);
	/* a repeated name replaces the earlier entry (never open a FIFO made before) */
	unlinkat(dir_fd, e->name, 0);
	if (!e->kind[0]) {
		write_file(dir_fd, e, -1);
	} else if (!strcmp(e->kind, "dir")) {
		mkdirat(dir_fd, e->name, 0700);
	} else if (!strncmp(e->kind, "size ", 5)) {
		size = given_size(e->kind);
		if (size >= 0)
			write_file(dir_fd, e, size);
	} else if (!strcmp(e->kind, "symlink")) {
		make_symlink(dir_fd, e);
	} else if (!strcmp(e->kind, "fifo") && fifo_ok) {
		mkfifoat(dir_fd, e->name, 0600);
	}
}

void fuzz_tree_write(const char *dir, const uint8_t *data, size_t len)
{
	bool fifo_ok = fuzz_strict();
	int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	unsigned int made = 0;
	struct entry e;
	size_t pos = 0;

	if (dir_fd < 0) {
		fprintf(stderr, "fuzz: cannot open %s: %s\n", dir, strerror(errno));
		abort();
	}
	while (pos < len && made < FUZZ_TREE_MAX_ENTRIES) {
		if (!next_entry(data, len, &pos, &e))
			continue;
		make_entry(dir_fd, &e, fifo_ok);
		made++;
	}
	close(dir_fd);
}
