// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "dump_guard.h"
#include "kfd_ioctl.h"

#define GUARD_DONE_BYTE	    'D'
#define GUARD_SEIZE_POLL_MS 5

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Closes every fd but the three kept ones (sorted into keep[]). */
static void close_all_but(int a, int b, int c)
{
	int keep[3] = {a, b, c}, t, i, j, from = 0;

	for (i = 0; i < 3; i++)
		for (j = i + 1; j < 3; j++)
			if (keep[j] < keep[i]) {
				t = keep[i];
				keep[i] = keep[j];
				keep[j] = t;
			}
	for (i = 0; i < 3; i++) {
		if (keep[i] > from)
			close_range((unsigned int)from, (unsigned int)keep[i] - 1, 0);
		from = keep[i] + 1;
	}
	close_range((unsigned int)from, ~0u, 0);
}

static void kmsg(const char *line)
{
	int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	if (write(fd, line, strlen(line)) < 0) {
		/* nothing else to tell it to */
	}
	close(fd);
}

/* CRIU died without standing us down: become the leader's ptracer, UNPAUSE. */
static int unpause_as_tracer(int kfd_fd, pid_t leader, uint32_t ns_pid)
{
	struct kfd_ioctl_criu_args args = {.op = KFD_CRIU_OP_UNPAUSE};
	uint64_t start = clock_usec();
	char line[256];
	int ret;

	/* EPERM while the dead CRIU is still its tracer (exit_ptrace() comes after exit_files()) */
	while (ptrace(PTRACE_SEIZE, leader, 0, 0)) {
		if (errno != EPERM || clock_usec() - start > GUARD_SEIZE_WAIT_MS * 1000ull) {
			snprintf(line, sizeof(line),
				 "amdgpu_plugin: criu died during the dump of pid %u; cannot "
				 "unpause its GPU queues (ptrace: %s): restart it\n",
				 ns_pid, strerror(errno));
			kmsg(line);
			return 1;
		}
		sleep_ms(GUARD_SEIZE_POLL_MS);
	}
	ret = kfd_criu_op(kfd_fd, &args);
	snprintf(line, sizeof(line),
		 "amdgpu_plugin: criu died during the dump of pid %u; %s its GPU queues "
		 "%llu ms after (%s)\n",
		 ns_pid, ret ? "could not unpause" : "unpaused",
		 (unsigned long long)(clock_usec() - start) / 1000,
		 ret ? strerror(-ret) : "UNPAUSE as its new tracer");
	kmsg(line);
	return ret ? 1 : 0; /* exiting detaches us */
}

static void guardian(int kfd_fd, int done_rd, int exit_wr, pid_t leader, uint32_t ns_pid)
{
	static const int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2};
	ssize_t n;
	size_t i;
	char c;

	for (i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		signal(ignored[i], SIG_IGN);
	close_all_but(kfd_fd, done_rd, exit_wr);
	do
		n = read(done_rd, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1 && c == GUARD_DONE_BYTE)
		_exit(0);
	_exit(unpause_as_tracer(kfd_fd, leader, ns_pid));
}

int dump_guard_start(struct dump_guard *g, int kfd_fd, pid_t leader, uint32_t ns_pid)
{
	int done[2], ex[2], status;
	pid_t child;

	*g = DUMP_GUARD_NONE;
	if (pipe2(done, O_CLOEXEC))
		return -errno;
	if (pipe2(ex, O_CLOEXEC)) {
		close(done[0]);
		close(done[1]);
		return -errno;
	}
	child = fork();
	if (!child) {
		/* detached from CRIU: not its child, not in its session or process group */
		close(done[1]);
		close(ex[0]);
		setsid();
		child = fork();
		if (child)
			_exit(child < 0 ? 1 : 0);
		guardian(kfd_fd, done[0], ex[1], leader, ns_pid);
	}
	close(done[0]);
	close(ex[1]);
	if (child < 0) {
		close(done[1]);
		close(ex[0]);
		return -EAGAIN;
	}
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) { /* no guardian was forked */
		close(done[1]);
		close(ex[0]);
		return -EAGAIN;
	}
	g->done_fd = done[1];
	g->exit_fd = ex[0];
	return 0;
}

void dump_guard_stand_down(struct dump_guard *g)
{
	struct pollfd p = {.fd = g->exit_fd, .events = POLLIN};
	uint64_t deadline = clock_usec() + GUARD_EXIT_WAIT_MS * 1000ull, now;
	char c = GUARD_DONE_BYTE;

	if (g->done_fd < 0)
		return;
	if (write(g->done_fd, &c, 1) != 1) {
		/* the guardian is gone already: its end of the pipe is closed */
	}
	close(g->done_fd);
	/* EOF (POLLHUP) once the guardian and its copies of the pipe are gone */
	while ((now = clock_usec()) < deadline) {
		int r = poll(&p, 1, (int)((deadline - now) / 1000) + 1);

		if (r > 0 || (r < 0 && errno != EINTR))
			break;
	}
	close(g->exit_fd);
	*g = DUMP_GUARD_NONE;
}
