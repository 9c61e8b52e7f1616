// SPDX-License-Identifier: MIT
/*
 * Guardians (plugin/guardian.h, restore_guard.h). A forked child stands in
 * for CRIU: it starts the guardian and then either stands it down or just
 * exits, as a killed CRIU would. The test process is a child subreaper, so
 * the processes the stand-in leaves behind become its children.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugin/guardian.h"
#include "plugin/restore/restore_guard.h"
#include "plugin/restore/shared_state.h"

static char marker[64];

/*
 * waitpid() as the plugin calls it, optionally late: a caller descheduled
 * between fork() and waitpid(), as on a busy machine, made deterministic.
 */
static volatile sig_atomic_t slow_waitpid;

pid_t waitpid(pid_t pid, int *status, int options)
{
	struct timespec t = {.tv_nsec = 100 * 1000000L};

	if (slow_waitpid)
		while (nanosleep(&t, &t) && errno == EINTR)
			;
	return (pid_t)syscall(SYS_wait4, pid, status, options, NULL);
}

/*
 * The orphaned callback: writes which of the fds 'keep' and 'other' are
 * open, into a temporary file renamed to the marker: the marker appears
 * whole, so that the test reads it once it exists, however slow the writer.
 */
struct fd_probe {
	int keep, other;
};

static int write_marker(void *arg)
{
	const struct fd_probe *p = arg;
	char text[64], tmp[80];
	int fd, keep = fcntl(p->keep, F_GETFD) >= 0, other = fcntl(p->other, F_GETFD) >= 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", marker);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return 1;
	snprintf(text, sizeof(text), "orphaned keep=%d other=%d", keep, other);
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		return 1;
	close(fd);
	return rename(tmp, marker) ? 1 : 0;
}

static int wait_for_file(const char *path, int ms)
{
	struct timespec t = {.tv_nsec = 10 * 1000000L};

	for (; ms > 0; ms -= 10) {
		if (!access(path, F_OK))
			return 0;
		nanosleep(&t, NULL);
	}
	return -1;
}

static int setup(void **state)
{
	(void)state;
	snprintf(marker, sizeof(marker), "/tmp/test_guardian.%d", (int)getpid());
	unlink(marker);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	return 0;
}

static int teardown(void **state)
{
	char tmp[80];

	(void)state;
	snprintf(tmp, sizeof(tmp), "%s.tmp", marker);
	unlink(marker);
	unlink(tmp);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	return 0;
}

/* The stand-in for CRIU: starts a guardian, stands it down if asked, exits. */
static void criu_stand_in(bool stand_down)
{
	struct fd_probe p = {.keep = open("/dev/null", O_RDONLY | O_CLOEXEC),
			     .other = open("/dev/null", O_RDONLY | O_CLOEXEC)};
	struct guardian g;
	pid_t criu = fork();
	int status;

	assert_true(criu >= 0);
	if (!criu) {
		if (guardian_start(&g, &p.keep, 1, write_marker, &p))
			_exit(2);
		if (stand_down)
			guardian_stand_down(&g);
		_exit(0); /* without standing down: as if killed */
	}
	assert_int_equal(waitpid(criu, &status, 0), criu);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(p.keep);
	close(p.other);
}

static void stood_down_guardian_does_nothing(void **state)
{
	(void)state;
	criu_stand_in(true);
	assert_int_equal(wait_for_file(marker, 500), -1);
}

static void orphaned_guardian_acts_with_only_its_fds(void **state)
{
	char text[64] = "";
	int fd;

	(void)state;
	criu_stand_in(false);
	assert_int_equal(wait_for_file(marker, 10000), 0); /* renamed into place: whole */
	fd = open(marker, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_true(read(fd, text, sizeof(text) - 1) > 0);
	close(fd);
	assert_string_equal(text, "orphaned keep=1 other=0");
}

/* CRIU's SIGCHLD handler while the parasite is in: any child it can reap ends the dump. */
static volatile sig_atomic_t criu_reaped;

static void criu_sigchld(int sig, siginfo_t *si, void *uc)
{
	int status;

	(void)sig;
	(void)si;
	(void)uc;
	if (syscall(SYS_wait4, -1, &status, WNOHANG, NULL) > 0)
		criu_reaped = 1;
}

/*
 * The guardian's fork is invisible to CRIU's SIGCHLD handler even when the
 * plugin reaps the child late (CRIU 4.1.1 failed dumps on a busy machine:
 * "exited with 0 unexpectedly").
 */
static void guardian_fork_is_invisible_to_criu(void **state)
{
	struct fd_probe p = {.keep = open("/dev/null", O_RDONLY | O_CLOEXEC), .other = -1};
	pid_t criu = fork();
	int status;

	(void)state;
	assert_true(criu >= 0);
	if (!criu) {
		struct sigaction sa = {.sa_sigaction = criu_sigchld,
				       .sa_flags = SA_SIGINFO | SA_RESTART};
		struct timespec t = {.tv_nsec = 50 * 1000000L};
		struct guardian g;

		sigaction(SIGCHLD, &sa, NULL);
		slow_waitpid = 1;
		if (guardian_start(&g, &p.keep, 1, write_marker, &p))
			_exit(2);
		slow_waitpid = 0;
		nanosleep(&t, NULL); /* a pending SIGCHLD is delivered by now */
		guardian_stand_down(&g);
		_exit(criu_reaped ? 3 : 0);
	}
	assert_int_equal(waitpid(criu, &status, 0), criu);
	close(p.keep);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0); /* 3: CRIU's handler reaped the plugin's child */
}

/*
 * A child that sleeps for ever, having unmapped `unmap` first. Returns once
 * the unmapping is done: on a busy machine the guardian could otherwise
 * find the mapping still there and rightly kill a task the test meant as
 * "past its restorer".
 */
static pid_t sleeper(void *unmap, size_t len)
{
	int ready[2];
	char byte = 0;
	pid_t pid;

	if (pipe(ready))
		return -1;
	pid = fork();
	if (!pid) {
		close(ready[0]);
		if (unmap)
			munmap(unmap, len); /* past its restorer: the mapping is gone */
		if (write(ready[1], &byte, 1) != 1)
			_exit(1);
		close(ready[1]);
		pause();
		_exit(0);
	}
	close(ready[1]);
	if (pid > 0 && read(ready[0], &byte, 1) != 1)
		pid = -1;
	close(ready[0]);
	return pid;
}

/* Waits up to ms for pid (our child, via the subreaper) to end; its signal or -1. */
static int killed_by(pid_t pid, int ms)
{
	struct timespec t = {.tv_nsec = 10 * 1000000L};
	int status;

	for (; ms > 0; ms -= 10) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
		nanosleep(&t, NULL);
	}
	return -1;
}

/* A task of image `id` (its own pid) whose file was restored, resumed or not. */
static void record_done(struct shared_state *sh, uint32_t id, pid_t pid, bool resumed)
{
	uint64_t deadline = shared_deadline(5000);

	assert_int_equal(shared_image_begin(sh, id, (uint32_t)pid, deadline), 0);
	assert_int_equal(shared_image_end(sh, id, 0, 0, 0, deadline), 0);
	if (resumed)
		assert_int_equal(shared_image_resumed(sh, id, deadline), 0);
}

static void restore_guard_kills_unfinished_tasks_only(void **state)
{
	static const uint32_t ids[] = {11, 12};
	int pipefd[2], status;
	pid_t criu, tasks[4];

	(void)state;
	assert_int_equal(pipe(pipefd), 0);
	criu = fork();
	assert_true(criu >= 0);
	if (!criu) {
		struct shared_state *sh = shared_state_create(ids, 2);
		struct guardian g;

		if (!sh || restore_guard_start(&g, sh))
			_exit(2);
		tasks[0] = sleeper(NULL, 0);	     /* mid-restore */
		tasks[1] = sleeper(sh, sizeof(*sh)); /* restored, never resumed */
		tasks[2] = sleeper(sh, sizeof(*sh)); /* restored and resumed */
		tasks[3] = sleeper(sh, sizeof(*sh)); /* not ours at all */
		record_done(sh, 11, tasks[1], false);
		record_done(sh, 12, tasks[2], true);
		if (write(pipefd[1], tasks, sizeof(tasks)) != sizeof(tasks))
			_exit(3);
		_exit(0); /* the master dies */
	}
	close(pipefd[1]);
	assert_int_equal(read(pipefd[0], tasks, sizeof(tasks)), sizeof(tasks));
	close(pipefd[0]);
	assert_int_equal(waitpid(criu, &status, 0), criu);
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(killed_by(tasks[0], 10000), SIGKILL);
	assert_int_equal(killed_by(tasks[1], 10000), SIGKILL);
	assert_int_equal(killed_by(tasks[2], 300), -1);
	assert_int_equal(killed_by(tasks[3], 10), -1);
	kill(tasks[2], SIGKILL);
	kill(tasks[3], SIGKILL);
	assert_int_equal(killed_by(tasks[2], 5000), SIGKILL);
	assert_int_equal(killed_by(tasks[3], 5000), SIGKILL);
}

static void restore_guard_stood_down_kills_nothing(void **state)
{
	static const uint32_t ids[] = {11};
	int pipefd[2], status;
	pid_t criu, task;

	(void)state;
	assert_int_equal(pipe(pipefd), 0);
	criu = fork();
	assert_true(criu >= 0);
	if (!criu) {
		struct shared_state *sh = shared_state_create(ids, 1);
		struct guardian g;

		if (!sh || restore_guard_start(&g, sh))
			_exit(2);
		task = sleeper(NULL, 0);
		if (write(pipefd[1], &task, sizeof(task)) != sizeof(task))
			_exit(3);
		guardian_stand_down(&g);
		_exit(0);
	}
	close(pipefd[1]);
	assert_int_equal(read(pipefd[0], &task, sizeof(task)), sizeof(task));
	close(pipefd[0]);
	assert_int_equal(waitpid(criu, &status, 0), criu);
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(killed_by(task, 500), -1);
	kill(task, SIGKILL);
	assert_int_equal(killed_by(task, 5000), SIGKILL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(stood_down_guardian_does_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(guardian_fork_is_invisible_to_criu, setup,
						teardown),
		cmocka_unit_test_setup_teardown(orphaned_guardian_acts_with_only_its_fds, setup,
						teardown),
		cmocka_unit_test_setup_teardown(restore_guard_kills_unfinished_tasks_only, setup,
						teardown),
		cmocka_unit_test_setup_teardown(restore_guard_stood_down_kills_nothing, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
