// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plugin/clock.h"
#include "plugin/guardian.h"

#define GUARDIAN_DONE_BYTE 'D'
#define GUARDIAN_MAX_KEEP  7

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Closes every fd but keep[0..n-1]. */
static void close_all_but(int *keep, size_t n)
{
	unsigned int from = 0;
	size_t i;

	qsort(keep, n, sizeof(*keep), cmp_int);
	for (i = 0; i < n; i++) {
		if (keep[i] < 0)
			continue;
		if ((unsigned int)keep[i] > from)
			close_range(from, (unsigned int)keep[i] - 1, 0);
		from = (unsigned int)keep[i] + 1;
	}
	close_range(from, ~0u, 0);
}

void guardian_kmsg(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int fd, n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) < 0) {
		/* nowhere else to report to */
	}
	close(fd);
}

/* Was the stand-down byte written (non-blocking read of what is there)? */
static bool stood_down(int done_rd)
{
	char c = 0;
	ssize_t n;

	fcntl(done_rd, F_SETFL, O_NONBLOCK);
	do
		n = read(done_rd, &c, 1);
	while (n < 0 && errno == EINTR);
	return n == 1 && c == GUARDIAN_DONE_BYTE;
}

/*
 * Waits until CRIU has ended: EOF on the done pipe, or (when CRIU's children
 * still hold copies of its write end) CRIU's pidfd becoming readable.
 */
static __attribute__((noreturn)) void guardian_main(int *keep, size_t n_keep, int done_rd,
						    int criu_pidfd, int (*orphaned)(void *),
						    void *arg)
{
	static const int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2};
	struct pollfd p[2] = {{.fd = done_rd, .events = POLLIN},
			      {.fd = criu_pidfd, .events = POLLIN}};
	size_t i;

	for (i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		signal(ignored[i], SIG_IGN);
	close_all_but(keep, n_keep);
	while (poll(p, criu_pidfd >= 0 ? 2 : 1, -1) < 0 && errno == EINTR)
		;
	_exit(stood_down(done_rd) ? 0 : orphaned(arg));
}

/*
 * Forks the guardian (a grandchild: the child in between exits at once) with
 * SIGCHLD blocked until that child is reaped, as CRIU's own cr_system()
 * does: while the parasite is in, CRIU's SIGCHLD handler takes any child's
 * exit for a crashed task and ends the dump (waitpid(-1): "exited with 0
 * unexpectedly"). Unblocked after our waitpid, the pending signal finds no
 * child to reap and the handler returns.
 */
static pid_t fork_reaped(int *all, size_t n_all, int done[2], int ex[2], int (*orphaned)(void *),
			 void *arg, int *status)
{
	sigset_t chld, old;
	pid_t child;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &chld, &old);
	child = fork();
	if (!child) {
		/* CRIU's pidfd (Linux 5.3+; else the pipe alone tells) */
		int pidfd = (int)syscall(SYS_pidfd_open, getppid(), 0);

		pthread_sigmask(SIG_SETMASK, &old, NULL);
		all[n_all] = pidfd;
		close(done[1]);
		close(ex[0]);
		setsid();
		child = fork();
		if (child)
			_exit(child < 0 ? 1 : 0);
		guardian_main(all, n_all + 1, done[0], pidfd, orphaned, arg);
	}
	if (child > 0)
		while (waitpid(child, status, 0) < 0 && errno == EINTR)
			;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return child;
}

int guardian_start(struct guardian *g, const int *keep, size_t n_keep, int (*orphaned)(void *arg),
		   void *arg)
{
	int done[2], ex[2], all[GUARDIAN_MAX_KEEP], status = 0;
	pid_t child;
	size_t i;

	*g = GUARDIAN_NONE;
	if (n_keep > GUARDIAN_MAX_KEEP - 3)
		return -EINVAL;
	if (pipe2(done, O_CLOEXEC))
		return -errno;
	if (pipe2(ex, O_CLOEXEC)) {
		close(done[0]);
		close(done[1]);
		return -errno;
	}
	for (i = 0; i < n_keep; i++)
		all[i] = keep[i];
	all[n_keep] = done[0];
	all[n_keep + 1] = ex[1];
	child = fork_reaped(all, n_keep + 2, done, ex, orphaned, arg, &status);
	close(done[0]);
	close(ex[1]);
	if (child < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		close(done[1]);
		close(ex[0]);
		return -EAGAIN;
	}
	g->done_fd = done[1];
	g->exit_fd = ex[0];
	return 0;
}

void guardian_stand_down(struct guardian *g)
{
	struct pollfd p = {.fd = g->exit_fd, .events = POLLIN};
	uint64_t deadline = clock_usec() + GUARDIAN_EXIT_WAIT_MS * 1000ull, now;
	char c = GUARDIAN_DONE_BYTE;

	if (g->done_fd < 0)
		return;
	if (write(g->done_fd, &c, 1) != 1) {
		/* the guardian is gone already */
	}
	close(g->done_fd);
	while ((now = clock_usec()) < deadline) {
		int r = poll(&p, 1, (int)((deadline - now) / 1000) + 1);

		if (r > 0 || (r < 0 && errno != EINTR))
			break;
	}
	close(g->exit_fd);
	*g = GUARDIAN_NONE;
}
