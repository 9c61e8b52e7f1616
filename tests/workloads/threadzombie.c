// SPDX-License-Identifier: MIT
/*
 * Self-verifying CRIU workload with threads and zombie children: after a
 * dump and restore it checks that all its threads still run and agree with
 * their own saved state, that a memory pattern is intact and that its zombie
 * children are still zombies, under the same PIDs, with the exit codes they
 * died with.
 *
 *   threadzombie DIR
 *
 * State kept:
 *  - NTHREADS counting threads: every TICK_US each checks that its shared
 *    counter equals the copy on its own stack, then increments both;
 *  - an anonymous private mapping (ANON_LEN) filled with a known pattern;
 *  - NZOMBIES children that exit at once with code ZOMBIE_CODE + i and are
 *    not waited for until the check.
 *
 * Protocol, all files in DIR (written to a temporary name and renamed):
 *  - DIR/ready   "pid=P start=T zombies=Z1,Z2 threads=N" once set up
 *  - DIR/trigger created by the test: "expect=restored" or "expect=original"
 *  - DIR/result  "PASS ..." (exit 0) or "FAIL <first difference>" (exit 1)
 * With no trigger within LIFETIME_S the workload gives up: "FAIL no trigger".
 *
 * "Restored" is observed as in selfcheck.c: a restored task has the old PID
 * but a new start time (field 22 of /proc/self/stat), so "ready" is written
 * READY_DELAY_MS after start-up to keep the two start times apart.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

#define NTHREADS       4
#define NZOMBIES       2
#define ZOMBIE_CODE    41
#define ANON_LEN       (32 * 4096)
#define TICK_US	       1000
#define LIFETIME_S     120
#define READY_DELAY_MS 100 /* >> one clock tick (10 ms at USER_HZ 100) */

struct worker {
	pthread_t thread;
	_Atomic uint64_t counter; /* mirrors the thread's stack copy */
	_Atomic int failed;
	char error[120];
};

static struct worker workers[NTHREADS];
static _Atomic int stop_threads;
static uint8_t *anon;
static pid_t zombies[NZOMBIES];
static unsigned long long start_time;

static uint8_t pattern(size_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ULL;
	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ULL;
	return (uint8_t)(x >> 32);
}

/* The text after "comm)" of /proc/PATH/stat: field 3 (state) onwards; NULL on error. */
static char *read_stat(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t len = fd < 0 ? -1 : read(fd, buf, n - 1);
	char *p;

	if (fd >= 0)
		close(fd);
	if (len <= 0)
		return NULL;
	buf[len] = '\0';
	p = strrchr(buf, ')'); /* comm may hold spaces and ')' */
	return p && p[1] == ' ' ? p + 2 : NULL;
}

static unsigned long long read_start_time(void)
{
	char buf[1024], *p = read_stat("/proc/self/stat", buf, sizeof(buf));
	unsigned long long v = 0;

	/* start time is field 22 */
	if (!p || sscanf(p,
			 "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d "
			 "%*d %llu",
			 &v) != 1)
		return 0;
	return v;
}

/* 0 if PID is a zombie child of ours, else -1 with the reason in why */
static int is_my_zombie(pid_t pid, char *why, size_t n)
{
	char path[64], buf[1024], state = '?';
	int ppid = 0;
	char *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	p = read_stat(path, buf, sizeof(buf));
	if (!p || sscanf(p, "%c %d", &state, &ppid) != 2) {
		snprintf(why, n, "zombie %d: no %s", pid, path);
		return -1;
	}
	if (state != 'Z' || ppid != getpid()) {
		snprintf(why, n, "zombie %d: state %c, parent %d (want Z, %d)", pid, state, ppid,
			 getpid());
		return -1;
	}
	return 0;
}

static int count_threads(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t len = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	char *p;

	if (fd >= 0)
		close(fd);
	if (len <= 0)
		return -1;
	buf[len] = '\0';
	p = strstr(buf, "\nThreads:");
	return p ? atoi(p + 9) : -1;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t n = 0; /* on this thread's stack: CRIU must restore it */

	while (!atomic_load(&stop_threads)) {
		if (atomic_load(&w->counter) != n && !atomic_load(&w->failed)) {
			snprintf(w->error, sizeof(w->error), "shared counter %llu, stack copy %llu",
				 (unsigned long long)atomic_load(&w->counter),
				 (unsigned long long)n);
			atomic_store(&w->failed, 1);
		}
		n++;
		atomic_store(&w->counter, n);
		sleep_us(TICK_US);
	}
	return NULL;
}

static int setup(void)
{
	char why[128];

	anon = mmap(NULL, ANON_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (anon == MAP_FAILED)
		return -1;
	for (size_t i = 0; i < ANON_LEN; i++)
		anon[i] = pattern(i);
	for (int i = 0; i < NZOMBIES; i++) {
		zombies[i] = fork();
		if (zombies[i] < 0)
			return -1;
		if (zombies[i] == 0)
			_exit(ZOMBIE_CODE + i);
	}
	/* the dump must find them dead, not still exiting */
	for (int i = 0; i < NZOMBIES; i++) {
		int64_t deadline = now_ms() + 5000;
		while (is_my_zombie(zombies[i], why, sizeof(why))) {
			if (now_ms() > deadline) {
				fprintf(stderr, "threadzombie: %s\n", why);
				return -1;
			}
			sleep_us(1000);
		}
	}
	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]))
			return -1;
	start_time = read_start_time();
	return start_time ? 0 : -1;
}

/* Checks everything; returns 0 or fills why with the first failure. */
static int check(const char *expect, const uint64_t *ready_counters, char *why, size_t n)
{
	unsigned long long now_start = read_start_time();
	int restored = now_start != start_time, threads = count_threads(), status;
	uint64_t c1[NTHREADS];

	if (strcmp(expect, "restored") && strcmp(expect, "original")) {
		snprintf(why, n, "bad trigger \"%s\"", expect);
		return -1;
	}
	if (restored != !strcmp(expect, "restored")) {
		snprintf(why, n, "expected %s, but start time %llu -> %llu says %s", expect,
			 start_time, now_start, restored ? "restored" : "not restored");
		return -1;
	}
	if (threads != NTHREADS + 1) {
		snprintf(why, n, "%d threads, expected %d", threads, NTHREADS + 1);
		return -1;
	}
	/* every thread moved on since "ready" and still moves now */
	for (int i = 0; i < NTHREADS; i++) {
		c1[i] = atomic_load(&workers[i].counter);
		if (c1[i] <= ready_counters[i]) {
			snprintf(why, n,
				 "thread %d: counter %llu did not advance from %llu at ready", i,
				 (unsigned long long)c1[i], (unsigned long long)ready_counters[i]);
			return -1;
		}
	}
	for (int i = 0; i < NTHREADS; i++) {
		for (int t = 0; t < 1000 && atomic_load(&workers[i].counter) == c1[i]; t++)
			sleep_us(1000);
		if (atomic_load(&workers[i].counter) == c1[i]) {
			snprintf(why, n, "thread %d stuck at %llu", i, (unsigned long long)c1[i]);
			return -1;
		}
	}
	atomic_store(&stop_threads, 1);
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(workers[i].thread, NULL);
		if (atomic_load(&workers[i].failed)) {
			snprintf(why, n, "thread %d: %s", i, workers[i].error);
			return -1;
		}
	}
	for (size_t i = 0; i < ANON_LEN; i++) {
		if (anon[i] != pattern(i)) {
			snprintf(why, n, "anon+0x%zx: got 0x%02x want 0x%02x", i, anon[i],
				 pattern(i));
			return -1;
		}
	}
	/* still zombies of ours; reaping them gives back their exit codes */
	for (int i = 0; i < NZOMBIES; i++)
		if (is_my_zombie(zombies[i], why, n))
			return -1;
	for (int i = 0; i < NZOMBIES; i++) {
		pid_t pid = waitpid(zombies[i], &status, WNOHANG);
		if (pid != zombies[i] || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != ZOMBIE_CODE + i) {
			snprintf(why, n, "zombie %d: waitpid %d, status 0x%x (want exit %d)",
				 zombies[i], pid, pid > 0 ? status : 0, ZOMBIE_CODE + i);
			return -1;
		}
	}
	if (waitpid(-1, &status, WNOHANG) != -1 || errno != ECHILD) {
		snprintf(why, n, "a child other than the zombies");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t ready_counters[NTHREADS];
	char expect[64], why[256] = "";
	int64_t deadline;
	int ret;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	/* Inherited fds may belong to other mount namespaces; CRIU cannot dump those. */
	if (close_range(3, ~0U, 0)) {
		perror("close_range");
		return 2;
	}
	if (chdir(argv[1]) || setup()) {
		perror("threadzombie: setup");
		return 2;
	}
	sleep_us(READY_DELAY_MS * 1000);
	for (int i = 0; i < NTHREADS; i++) {
		for (int t = 0; t < 5000 && atomic_load(&workers[i].counter) < 5; t++)
			sleep_us(1000);
		ready_counters[i] = atomic_load(&workers[i].counter);
	}
	if (write_file("ready", "pid=%d start=%llu zombies=%d,%d threads=%d\n", getpid(),
		       start_time, zombies[0], zombies[1], NTHREADS)) {
		perror("threadzombie: ready");
		return 2;
	}

	deadline = now_ms() + (int64_t)LIFETIME_S * 1000;
	for (;;) {
		int fd = open("trigger", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t len = read(fd, expect, sizeof(expect) - 1);
			close(fd);
			expect[len > 0 ? len : 0] = '\0';
			expect[strcspn(expect, "\n")] = '\0';
			break;
		}
		if (now_ms() > deadline) {
			write_file("result", "FAIL no trigger within %d s\n", LIFETIME_S);
			return 1;
		}
		sleep_us(10000);
	}

	const char *e = strncmp(expect, "expect=", 7) ? expect : expect + 7;
	ret = check(e, ready_counters, why, sizeof(why));
	if (ret == 0)
		ret = write_file("result", "PASS %s start=%llu->%llu zombies=%d,%d threads=%d\n", e,
				 start_time, read_start_time(), zombies[0], zombies[1], NTHREADS);
	else
		write_file("result", "FAIL %s\n", why);
	return ret ? 1 : 0;
}
