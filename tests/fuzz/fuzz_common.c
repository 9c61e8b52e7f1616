// SPDX-License-Identifier: MIT
/* Helpers of the fuzz targets (see fuzz_common.h). */
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "fuzz_tree.h"

/* The sanitizers' (weak: the coverage build has none). */
extern void __sanitizer_set_report_fd(void *fd) __attribute__((weak));

static char scratch_path[256];
/* The real stderr, kept before libFuzzer's -close_fd_mask closes it. */
static int report_fd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	report_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
	/* sanitizer reports too: fuzz_tool points fd 2 at a capture while the tool runs */
	if (report_fd >= 0 && __sanitizer_set_report_fd)
		__sanitizer_set_report_fd((void *)(intptr_t)report_fd);
	return 0;
}

static void remove_scratch(void)
{
	if (scratch_path[0])
		fuzz_scratch_remove(scratch_path);
}

const char *fuzz_scratch(void)
{
	if (!scratch_path[0]) {
		fuzz_scratch_make(scratch_path, sizeof(scratch_path));
		atexit(remove_scratch);
	}
	return scratch_path;
}

int fuzz_scratch_fd(void)
{
	int fd = open(fuzz_scratch(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		fuzz_fail("cannot open %s: %s", fuzz_scratch(), strerror(errno));
	return fd;
}

void fuzz_put_file(const char *name, const uint8_t *data, size_t len)
{
	int dir_fd = fuzz_scratch_fd();
	int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ssize_t n;

	if (fd < 0)
		fuzz_fail("cannot create %s/%s: %s", fuzz_scratch(), name, strerror(errno));
	while (len) {
		n = write(fd, data, len);
		if (n <= 0)
			fuzz_fail("cannot write %s/%s: %s", fuzz_scratch(), name, strerror(errno));
		data += n;
		len -= (size_t)n;
	}
	close(fd);
	close(dir_fd);
}

bool fuzz_strict(void)
{
	const char *v = getenv("FUZZ_STRICT");

	return !v || strcmp(v, "0");
}

void fuzz_put_fifo(const char *name)
{
	int dir_fd = fuzz_scratch_fd();

	if (mkfifoat(dir_fd, name, 0600))
		fuzz_fail("cannot make FIFO %s/%s: %s", fuzz_scratch(), name, strerror(errno));
	close(dir_fd);
}

void fuzz_done(void)
{
	fuzz_scratch_clear(fuzz_scratch());
}

void fuzz_fail(const char *fmt, ...)
{
	int fd = report_fd >= 0 ? report_fd : 2;
	va_list ap;

	dprintf(fd, "fuzz: invariant broken: ");
	va_start(ap, fmt);
	vdprintf(fd, fmt, ap);
	va_end(ap);
	dprintf(fd, "\n");
	abort();
}

void fuzz_check_errmsg(const char *err, const char *what)
{
	FUZZ_ASSERT(err[0], "a failure without a message");
	FUZZ_ASSERT(!strchr(err, '\n'), "message of more than one line: %s", err);
	FUZZ_ASSERT(!what || strstr(err, what), "message does not name %s: %s", what, err);
	/*
	 * libFuzzer's -timeout alarm interrupts a blocked system call (no
	 * SA_RESTART): an EINTR here means the reader blocked, e.g. opening a
	 * FIFO, which outside the fuzzer blocks for ever.
	 */
	FUZZ_ASSERT(!strstr(err, strerror(EINTR)), "the reader blocked until interrupted: %s", err);
}
