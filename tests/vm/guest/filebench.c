// SPDX-License-Identifier: MIT
/*
 * The file side's limit for the vm-bench (guest/kfdsim/test-bench-engines.sh),
 * measured the way bo_stream moves a dump's and a restore's data: MIB MiB
 * written in 4 MiB pwrite()s from memory then fdatasync(), and read back in
 * 4 MiB pread()s. Prints "write W read R" in MiB/s. The file is removed.
 *
 * usage: filebench FILE MIB
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REQ (4u << 20)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long mib = argc == 3 ? atol(argv[2]) : 0, i, n;
	char *buf = malloc(REQ);
	double t0, t1, t2;
	int fd;

	if (mib <= 0 || !buf) {
		fprintf(stderr, "usage: filebench FILE MIB\n");
		return 2;
	}
	memset(buf, 0x5a, REQ); /* data, not zeros: as VRAM contents */
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		goto fail;
	n = mib * (1 << 20) / REQ;
	t0 = now();
	for (i = 0; i < n; i++)
		if (pwrite(fd, buf, REQ, (off_t)i * REQ) != (ssize_t)REQ)
			goto fail;
	if (fdatasync(fd))
		goto fail;
	t1 = now();
	for (i = 0; i < n; i++)
		if (pread(fd, buf, REQ, (off_t)i * REQ) != (ssize_t)REQ)
			goto fail;
	t2 = now();
	close(fd);
	unlink(argv[1]);
	printf("write %.0f read %.0f\n", n * 4.0 / (t1 - t0), n * 4.0 / (t2 - t1));
	return 0;
fail:
	fprintf(stderr, "filebench: %s: %s\n", argv[1], strerror(errno));
	unlink(argv[1]);
	return 1;
}
