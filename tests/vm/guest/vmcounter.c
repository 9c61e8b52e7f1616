// SPDX-License-Identifier: MIT
/*
 * vmcounter: a self-checking process to dump and restore in the test VM.
 *
 *   vmcounter LOG [FILE...]
 *
 * Every 20 ms it bumps a counter, sends it through a pipe it holds both ends
 * of, checks that the memfd mapping still holds the previous value and
 * stores the new one, and appends "tick N" to LOG. Any inconsistency (lost
 * pipe data, lost mapping content) is written as "MISMATCH ..." and ends the
 * process with status 1, so a restore that returns 0 but loses state is seen.
 * Each FILE is held open read-write for the dump to deal with (e.g. /dev/kfd).
 *
 * Inherited fds are closed first: a leaked fd of another mount namespace or a
 * pipe of the test harness would otherwise be dumped too.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE 2
#endif

static int log_fd = -1;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0 && write(log_fd, line, (size_t)n) != n)
		exit(2);
}

static void mismatch(const char *what, uint64_t want, uint64_t got)
{
	say("MISMATCH %s: want %llu got %llu\n", what, (unsigned long long)want, (unsigned long long)got);
	exit(1);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s LOG [FILE...]\n", argv[0]);
		return 2;
	}
	/* glibc 2.36 has close_range(); fall back to a loop on older kernels */
	if (close_range(3, ~0U, 0) != 0)
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
	log_fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (log_fd < 0) {
		perror(argv[1]);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		if (open(argv[i], O_RDWR) < 0) {
			say("open %s: %s\n", argv[i], strerror(errno));
			return 2;
		}
	}
	int p[2];
	int mfd = memfd_create("vmcounter", 0);
	if (pipe(p) != 0 || mfd < 0 || ftruncate(mfd, 4096) != 0) {
		say("setup: %s\n", strerror(errno));
		return 2;
	}
	volatile uint64_t *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (shared == MAP_FAILED) {
		say("mmap: %s\n", strerror(errno));
		return 2;
	}
	say("ready %d\n", getpid());
	const struct timespec period = { 0, 20 * 1000 * 1000 };
	for (uint64_t n = 1;; n++) {
		uint64_t got = 0;
		if (write(p[1], &n, sizeof(n)) != sizeof(n) || read(p[0], &got, sizeof(got)) != sizeof(got))
			mismatch("pipe io", n, 0);
		if (got != n)
			mismatch("pipe", n, got);
		if (*shared != n - 1)
			mismatch("memfd", n - 1, *shared);
		*shared = n;
		say("tick %llu\n", (unsigned long long)n);
		nanosleep(&period, NULL);
	}
}
