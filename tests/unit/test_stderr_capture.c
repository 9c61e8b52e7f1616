// SPDX-License-Identifier: MIT
/*
 * common/stderr_capture.c: what a library prints between begin and end never
 * reaches the file behind fd 2 (in a restored task, the application's own),
 * fd 2 comes back as it was (the same file, open or closed, close-on-exec or
 * not), and the text is handed over as one line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/stderr_capture.h"

/* Runs the check with fd 2 on a fresh file (cloexec or not), then puts the real fd 2 back. */
static void check_with_file(int cloexec)
{
	char path[] = "/tmp/test-stderr-XXXXXX", buf[64];
	struct stderr_capture cap;
	struct stat before, after;
	int real = dup(STDERR_FILENO), file = mkstemp(path);

	assert_true(real >= 0 && file >= 0);
	unlink(path);
	assert_int_equal(dup3(file, STDERR_FILENO, cloexec ? O_CLOEXEC : 0), STDERR_FILENO);
	assert_int_equal(fstat(STDERR_FILENO, &before), 0);

	assert_int_equal(stderr_capture_begin(&cap), 0);
	fprintf(stderr, "/usr/share/libdrm/amdgpu.ids: No such file or directory\n");
	assert_int_equal(write(STDERR_FILENO, "second\n", 7), 7);
	stderr_capture_end(&cap, buf, sizeof(buf));

	assert_int_equal(fstat(STDERR_FILENO, &after), 0);
	assert_int_equal(after.st_ino, before.st_ino);
	assert_int_equal(after.st_size, 0); /* nothing reached the file */
	assert_int_equal(!!(fcntl(STDERR_FILENO, F_GETFD) & FD_CLOEXEC), !!cloexec);
	/* truncated to the buffer, lines joined */
	assert_string_equal(buf, "/usr/share/libdrm/amdgpu.ids: No such file or directory; seco");
	assert_int_equal(dup2(real, STDERR_FILENO), STDERR_FILENO);
	close(real);
	close(file);
}

static void test_open_stderr(void **state)
{
	(void)state;
	check_with_file(0);
	check_with_file(1);
}

static void test_closed_stderr(void **state)
{
	struct stderr_capture cap;
	int real = dup(STDERR_FILENO);
	char buf[64];

	(void)state;
	assert_true(real >= 0);
	close(STDERR_FILENO);
	assert_int_equal(stderr_capture_begin(&cap), 0);
	assert_int_equal(write(STDERR_FILENO, "a\nb\n", 4), 4);
	stderr_capture_end(&cap, buf, sizeof(buf));
	assert_int_equal(fcntl(STDERR_FILENO, F_GETFD), -1); /* closed again */
	assert_string_equal(buf, "a; b");
	assert_int_equal(dup2(real, STDERR_FILENO), STDERR_FILENO);
	close(real);
}

static void test_nothing_said(void **state)
{
	struct stderr_capture cap;
	char buf[8] = "x";

	(void)state;
	assert_int_equal(stderr_capture_begin(&cap), 0);
	stderr_capture_end(&cap, buf, sizeof(buf));
	assert_string_equal(buf, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_stderr),
		cmocka_unit_test(test_closed_stderr),
		cmocka_unit_test(test_nothing_said),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
