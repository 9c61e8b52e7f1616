// SPDX-License-Identifier: MIT
/*
 * find_second_file(): which process (other than the caller) holds two given
 * open files. Files of /dev/null stand in for /dev/kfd files; a forked
 * child is the application: it inherits the test's files and opens its own,
 * which the test then duplicates with pidfd_getfd (as CRIU receives an
 * application's fds).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugin/file_holder.h"

/* find_second_file() with one known file */
static int second_of(int known_fd, int our_fd, uint32_t ns_pid, pid_t *holder)
{
	struct held_file known[2] = {{.fd = -1, .ns_pid = 0x7ffffff1u}, {known_fd, ns_pid}};
	size_t which = 0;
	int ret;

	ret = find_second_file(our_fd, known, 2, &which, holder);
	if (ret == 1)
		assert_int_equal(which, 1);
	return ret;
}

struct app {
	pid_t pid;
	int go;	    /* write end: the child exits when it reads */
	int fds[2]; /* our duplicates of the child's own files */
};

/* A child that opens n (<= 2) files of /dev/null and waits; false if pidfd_getfd is not allowed. */
static int app_start(struct app *app, int n)
{
	int go[2], ready[2], own[2], pidfd, i;
	char byte;

	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(ready), 0);
	app->pid = fork();
	assert_true(app->pid >= 0);
	if (!app->pid) {
		for (i = 0; i < n; i++)
			own[i] = open("/dev/null", O_RDONLY);
		alarm(30); /* the test failed an assertion: do not linger */
		if (write(ready[1], own, sizeof(own)) != sizeof(own))
			_exit(1);
		/* the parent's word to end, or its end (EOF): either way */
		_exit(read(go[0], &byte, 1) < 0);
	}
	close(go[0]);
	close(ready[1]);
	app->go = go[1];
	assert_int_equal(read(ready[0], own, sizeof(own)), sizeof(own));
	close(ready[0]);
	pidfd = (int)syscall(SYS_pidfd_open, app->pid, 0);
	for (i = 0; i < n; i++)
		app->fds[i] = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, own[i], 0);
	if (pidfd >= 0)
		close(pidfd);
	return app->fds[0] >= 0 && (n < 2 || app->fds[1] >= 0);
}

static void app_end(struct app *app)
{
	char byte = 0;

	assert_int_equal(write(app->go, &byte, 1), 1);
	close(app->go);
	assert_int_equal(waitpid(app->pid, NULL, 0), app->pid);
}

/* The application opened the same path twice: found, with its pid; then gone. */
static void app_with_two_files(void **state)
{
	struct app app = {.fds = {-1, -1}};
	int dup0, zero;
	pid_t holder = 0;

	(void)state;
	if (!app_start(&app, 2)) {
		app_end(&app);
		skip(); /* pidfd_getfd needs ptrace rights over the child */
	}
	dup0 = dup(app.fds[0]);
	assert_int_equal(find_second_file(app.fds[1], NULL, 0, &(size_t){0}, &holder), 0);
	assert_int_equal(same_open_file(getpid(), app.fds[0], getpid(), dup0), 1);
	assert_int_equal(same_open_file(getpid(), app.fds[0], getpid(), app.fds[1]), 0);
	assert_int_equal(second_of(app.fds[0], app.fds[1], (uint32_t)app.pid, &holder), 1);
	assert_int_equal(holder, app.pid);
	/* the caller (holding both copies) does not count; nor other pids */
	assert_int_equal(second_of(app.fds[0], app.fds[1], (uint32_t)getpid(), &holder), 0);
	assert_int_equal(second_of(app.fds[0], app.fds[1], 0x7ffffff0u, &holder), 0);
	/* a file the child does not hold */
	zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	assert_true(zero >= 0);
	assert_int_equal(second_of(zero, app.fds[1], (uint32_t)app.pid, &holder), 0);

	app_end(&app);
	assert_int_equal(second_of(app.fds[0], app.fds[1], (uint32_t)app.pid, &holder), 0);
	close(dup0);
	close(zero);
	close(app.fds[0]);
	close(app.fds[1]);
}

/*
 * The child inherited our file a and opened c (its own KFD process, in the
 * real case). Asked for another pid, (a, c) has no holder: c is not a second
 * file of that process; asked for the child, it has: the child holds both.
 */
static void app_with_inherited_file(void **state)
{
	struct app app = {.fds = {-1, -1}};
	int a = open("/dev/null", O_RDONLY); /* inherited */
	pid_t holder = 0;

	(void)state;
	assert_true(a >= 0);
	if (!app_start(&app, 1)) {
		app_end(&app);
		skip();
	}
	assert_int_equal(second_of(a, app.fds[0], (uint32_t)getppid(), &holder), 0);
	assert_int_equal(second_of(a, app.fds[0], (uint32_t)app.pid, &holder), 1);
	assert_int_equal(holder, app.pid);
	app_end(&app);
	close(app.fds[0]);
	close(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(app_with_two_files),
		cmocka_unit_test(app_with_inherited_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
