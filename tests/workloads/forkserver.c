// SPDX-License-Identifier: MIT
/*
 * A process tree whose children come and go while CRIU dumps it: CRIU (and
 * a plugin it runs per task) must cope with tasks that vanish between being
 * listed and being seized or inspected.
 *
 *   forkserver DIR ignore   SIGCHLD is SIG_IGN, so the kernel reaps the
 *                           children: each lives 0-2 ms (random) and is then
 *                           gone without a trace; the parent forks another
 *                           every 0-GAP_US us.
 *   forkserver DIR reap     NCHILD children at a time, each living 1-30 ms
 *                           (random); the parent reaps them with waitpid,
 *                           so an exited child stays a zombie until the
 *                           parent's next poll, and starts new ones.
 *
 * The pauses keep the fork rate to a few hundred a second: pid_max may be
 * 32768, and tests that run beside this one restore tasks under their old
 * PIDs, which a fast fork loop would take.
 *
 * Protocol, all files in DIR (written to a temporary name and renamed):
 *  - DIR/ready   "pid=P" once the first child was forked
 *  - DIR/trigger created by the test: the parent stops forking, checks that
 *                it still forks and reaps as it should and exits
 *  - DIR/result  "PASS forks=N fork_errors=N reaped=N" (exit 0) or
 *                "FAIL <why>" (exit 1)
 * With no trigger within LIFETIME_S it gives up: "FAIL no trigger".
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

#define GAP_US	   2000
#define NCHILD	   6
#define LIFETIME_S 300

static uint64_t rng;

/* xorshift64*: a child reseeds with its PID so siblings differ */
static uint32_t rnd(uint32_t n)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 0x2545f4914f6cdd1dULL) >> 32) % n;
}

static void seed(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	rng = ((uint64_t)getpid() << 32 ^ (uint64_t)ts.tv_nsec) | 1;
}

/* A child that lives min_us + [0, span_us) and exits 0. */
static pid_t spawn(long min_us, uint32_t span_us)
{
	pid_t pid = fork();

	if (pid == 0) {
		seed();
		sleep_us(min_us + (long)rnd(span_us));
		_exit(0);
	}
	return pid;
}

int main(int argc, char **argv)
{
	unsigned long forks = 0, fork_errors = 0, reaped = 0, bad_status = 0;
	int reap, live = 0, ready = 0, status;
	int64_t deadline, next_poll = 0;
	struct stat st;
	pid_t pid;

	if (argc != 3 || (strcmp(argv[2], "ignore") && strcmp(argv[2], "reap"))) {
		fprintf(stderr, "usage: %s DIR ignore|reap\n", argv[0]);
		return 2;
	}
	reap = !strcmp(argv[2], "reap");
	/* Inherited fds may belong to other mount namespaces; CRIU cannot dump those. */
	if (close_range(3, ~0U, 0) || chdir(argv[1])) {
		perror("forkserver");
		return 2;
	}
	if (!reap && signal(SIGCHLD, SIG_IGN) == SIG_ERR) {
		perror("forkserver: SIGCHLD");
		return 2;
	}
	seed();
	deadline = now_ms() + (int64_t)LIFETIME_S * 1000;
	for (;;) {
		if (reap) {
			while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
				live--;
				reaped++;
				if (!WIFEXITED(status) || WEXITSTATUS(status))
					bad_status++;
			}
			while (live < NCHILD) {
				if (spawn(1000, 29000) < 0) {
					fork_errors++;
					break;
				}
				forks++;
				live++;
			}
			sleep_us(1000);
		} else {
			if (spawn(0, 2001) < 0)
				fork_errors++;
			else
				forks++;
			sleep_us((long)rnd(GAP_US + 1));
		}
		if (!ready && forks) {
			if (write_file("ready", "pid=%d\n", getpid())) {
				perror("forkserver: ready");
				return 2;
			}
			ready = 1;
		}
		/* the trigger is looked for every 10 ms, not on every fork */
		if (now_ms() < next_poll)
			continue;
		next_poll = now_ms() + 10;
		if (!stat("trigger", &st))
			break;
		if (now_ms() > deadline) {
			write_file("result", "FAIL no trigger within %d s\n", LIFETIME_S);
			return 1;
		}
	}

	/* still forks, and (reap) every child exited 0 and nothing else is left */
	if (spawn(0, 1) < 0) {
		write_file("result", "FAIL fork: %s\n", strerror(errno));
		return 1;
	}
	forks++;
	if (reap) {
		live++;
		deadline = now_ms() + 5000;
		while (live > 0 && now_ms() < deadline) {
			pid = waitpid(-1, &status, WNOHANG);
			if (pid > 0) {
				live--;
				reaped++;
				if (!WIFEXITED(status) || WEXITSTATUS(status))
					bad_status++;
			} else if (pid < 0) {
				break;
			} else {
				sleep_us(1000);
			}
		}
		if (live || bad_status || waitpid(-1, &status, WNOHANG) != -1 || errno != ECHILD) {
			write_file("result", "FAIL %d children unaccounted for, %lu bad exits\n",
				   live, bad_status);
			return 1;
		}
	} else {
		/* auto-reaped: wait() blocks until the last child has gone, then finds none */
		pid = waitpid(-1, &status, 0);
		if (pid != -1 || errno != ECHILD) {
			write_file("result",
				   "FAIL child %d was left to reap with SIGCHLD ignored\n", pid);
			return 1;
		}
	}
	write_file("result", "PASS forks=%lu fork_errors=%lu reaped=%lu\n", forks, fork_errors,
		   reaped);
	return 0;
}
